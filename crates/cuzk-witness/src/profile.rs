//! Where witness synthesis spends its time, by namespace: [`ProfileCs`] computes the same
//! assignments as [`crate::WitnessCs`] while timing every namespace (self time, allocations and
//! constraints per path, names with their numbers collapsed to `#` so that the 18 challenges
//! or 64 SHA-256 rounds add up in one row). Namespace names are formatted here, which
//! `WitnessCs` never does, so the profiled run is slower than the plain one; the shares are
//! what it is for.

use std::collections::HashMap;
use std::time::Instant;

use bellperson::{ConstraintSystem, LinearCombination, SynthesisError, Variable};
use blstrs::Scalar;
use serde::Serialize;

use crate::WitnessCs;

struct Node {
    name: String,
    parent: usize,
    children: HashMap<String, usize>,
    self_ns: u64,
    allocs: u64,
    constraints: u64,
}

/// A witness-computing constraint system that times its namespaces.
pub struct ProfileCs {
    /// The assignments computed so far, identical to what a plain [`WitnessCs`] would hold.
    pub w: WitnessCs,
    nodes: Vec<Node>,
    stack: Vec<usize>,
    max_depth: usize,
    last: Instant,
}

/// One namespace path of the profile.
#[derive(Clone, Debug, Serialize)]
pub struct Row {
    /// The namespace names from the root joined by `/`, digit runs collapsed to `#`;
    /// `(circuit)` for the root.
    pub path: String,
    /// How many namespaces deep the path is (0 for the root).
    pub depth: usize,
    /// Time inside this namespace, children included.
    pub seconds: f64,
    /// Time inside this namespace itself, children excluded.
    pub self_seconds: f64,
    /// Variables (inputs and aux) allocated in this namespace, children included.
    pub allocs: u64,
    /// Constraints enforced in this namespace, children included.
    pub constraints: u64,
}

fn collapse_digits(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut in_num = false;
    for ch in s.chars() {
        if ch.is_ascii_digit() {
            if !in_num {
                out.push('#');
            }
            in_num = true;
        } else {
            in_num = false;
            out.push(ch);
        }
    }
    out
}

impl ProfileCs {
    /// Namespaces deeper than `max_depth` are counted in their ancestor at that depth.
    pub fn new(inputs: usize, aux: usize, max_depth: usize) -> Self {
        let root = Node { name: String::new(), parent: 0, children: HashMap::new(), self_ns: 0, allocs: 0, constraints: 0 };
        ProfileCs { w: WitnessCs::with_capacity(inputs, aux), nodes: vec![root], stack: vec![0], max_depth, last: Instant::now() }
    }

    fn top(&self) -> usize {
        *self.stack.last().unwrap_or(&0)
    }

    fn tick(&mut self) {
        let now = Instant::now();
        let top = self.top();
        self.nodes[top].self_ns += (now - self.last).as_nanos() as u64;
        self.last = now;
    }

    /// Every path with its inclusive and self times, largest inclusive first.
    pub fn rows(&mut self) -> Vec<Row> {
        self.tick();
        let n = self.nodes.len();
        let mut incl = vec![0u64; n];
        let mut allocs = vec![0u64; n];
        let mut cons = vec![0u64; n];
        // Children always come after their parent.
        for i in (0..n).rev() {
            incl[i] += self.nodes[i].self_ns;
            allocs[i] += self.nodes[i].allocs;
            cons[i] += self.nodes[i].constraints;
            if i != 0 {
                let p = self.nodes[i].parent;
                incl[p] += incl[i];
                allocs[p] += allocs[i];
                cons[p] += cons[i];
            }
        }
        let mut path = vec![String::new(); n];
        let mut depth = vec![0usize; n];
        for i in 1..n {
            let p = self.nodes[i].parent;
            path[i] = if p == 0 { self.nodes[i].name.clone() } else { format!("{}/{}", path[p], self.nodes[i].name) };
            depth[i] = depth[p] + 1;
        }
        path[0] = "(circuit)".into();
        let mut rows: Vec<Row> = (0..n)
            .map(|i| Row {
                path: path[i].clone(),
                depth: depth[i],
                seconds: incl[i] as f64 * 1e-9,
                self_seconds: self.nodes[i].self_ns as f64 * 1e-9,
                allocs: allocs[i],
                constraints: cons[i],
            })
            .collect();
        rows.sort_by(|a, b| b.seconds.total_cmp(&a.seconds));
        rows
    }
}

impl ConstraintSystem<Scalar> for ProfileCs {
    type Root = Self;

    fn new() -> Self {
        ProfileCs::new(1, 0, usize::MAX)
    }

    fn alloc<F, A, AR>(&mut self, a: A, f: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Scalar, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        let top = self.top();
        self.nodes[top].allocs += 1;
        self.w.alloc(a, f)
    }

    fn alloc_input<F, A, AR>(&mut self, a: A, f: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Scalar, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        let top = self.top();
        self.nodes[top].allocs += 1;
        self.w.alloc_input(a, f)
    }

    fn enforce<A, AR, LA, LB, LC>(&mut self, _: A, _: LA, _: LB, _: LC)
    where
        A: FnOnce() -> AR,
        AR: Into<String>,
        LA: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
        LB: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
        LC: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
    {
        let top = self.top();
        self.nodes[top].constraints += 1;
    }

    fn push_namespace<NR, N>(&mut self, name: N)
    where
        NR: Into<String>,
        N: FnOnce() -> NR,
    {
        self.tick();
        let top = self.top();
        if self.stack.len() > self.max_depth {
            self.stack.push(top);
            return;
        }
        let key = collapse_digits(&name().into());
        let next = self.nodes.len();
        let id = *self.nodes[top].children.entry(key.clone()).or_insert(next);
        if id == next {
            self.nodes.push(Node { name: key, parent: top, children: HashMap::new(), self_ns: 0, allocs: 0, constraints: 0 });
        }
        self.stack.push(id);
    }

    fn pop_namespace(&mut self) {
        self.tick();
        if self.stack.len() > 1 {
            self.stack.pop();
        }
    }

    fn get_root(&mut self) -> &mut Self::Root {
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ff::Field;

    #[test]
    fn numbered_namespaces_add_up_and_the_witness_is_unchanged() {
        let mut p = ProfileCs::new(1, 0, 8);
        let mut plain = WitnessCs::with_capacity(1, 0);
        for i in 0..5u64 {
            let mut ns = p.namespace(|| format!("round {i}"));
            let x = ns.alloc(|| "x", || Ok(Scalar::from(i))).unwrap();
            ns.enforce(|| "c", |lc| lc + x, |lc| lc, |lc| lc);
            drop(ns);
            plain.alloc(|| "x", || Ok(Scalar::from(i))).unwrap();
        }
        p.alloc(|| "top", || Ok(Scalar::ONE)).unwrap();
        plain.alloc(|| "top", || Ok(Scalar::ONE)).unwrap();
        assert_eq!(p.w, plain);
        let rows = p.rows();
        let round = rows.iter().find(|r| r.path == "round #").expect("one row for every round");
        assert_eq!((round.allocs, round.constraints, round.depth), (5, 5, 1));
        let root = rows.iter().find(|r| r.path == "(circuit)").unwrap();
        assert_eq!((root.allocs, root.constraints), (6, 5));
        assert!(root.seconds >= round.seconds);
        assert_eq!(collapse_digits("layer 10 parent 3"), "layer # parent #");
    }
}
