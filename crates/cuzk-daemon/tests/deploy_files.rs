//! The operator files under `deploy/` against the daemon they describe, so that they cannot
//! drift from it unnoticed:
//! - `cuzk.example.toml` loads through [`DaemonConfig::load`] (unknown keys and bad values are
//!   refused there), and every key that `DaemonConfig::default().render()` prints is set in it
//!   with a comment directly above it: a new config key fails this test until it is documented
//!   (and the values are the defaults, as the file says, so a changed default fails it too);
//! - `grafana-dashboard.json` is JSON, every metric its PromQL expressions (and its variables'
//!   `label_values` queries) name is one that [`cuzk_daemon::metrics::render`] exports, and every
//!   exported metric is shown by at least one panel; the alert rules in `cuzk-alerts.yml` use
//!   exported metrics only;
//! - the systemd units and the example config agree (socket path, parameter directory, the stop
//!   timeout against the daemon's drain grace).
//!
//! The JSON reader is a small strict one of our own (duplicate keys refused too), as this crate
//! has no JSON dependency. The units' syntax is checked by `systemd-analyze verify`, not here
//! (docs/OPERATING.md records that check), so the suite needs no systemd.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use cuzk_daemon::DaemonConfig;

fn deploy(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../deploy").join(name)
}

fn read(name: &str) -> String {
    let p = deploy(name);
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

// ---------------------------------------------------------------------------------------------
// The example config.

/// The dotted key of every value in `t` ("listen", "engine.backend", …); arrays are values.
fn dotted_keys(t: &toml::Table, prefix: &str, out: &mut BTreeSet<String>) {
    for (k, v) in t {
        let key = if prefix.is_empty() { k.clone() } else { format!("{prefix}.{k}") };
        match v {
            toml::Value::Table(sub) => dotted_keys(sub, &key, out),
            _ => {
                out.insert(key);
            }
        }
    }
}

/// For each dotted key set in `text`, whether the line right above it is a comment.
fn commented_keys(text: &str) -> BTreeMap<String, bool> {
    let mut section = String::new();
    let mut prev_is_comment = false;
    let mut out = BTreeMap::new();
    for line in text.lines().map(str::trim) {
        if let Some(name) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            section = name.trim().to_string();
        } else if let Some((k, _)) = line.split_once('=').filter(|_| !line.starts_with('#')) {
            let k = k.trim().trim_matches('"');
            let key = if section.is_empty() { k.to_string() } else { format!("{section}.{k}") };
            out.insert(key, prev_is_comment);
        }
        prev_is_comment = line.starts_with('#');
    }
    out
}

#[test]
fn the_example_config_loads_and_sets_and_explains_every_key() {
    let path = deploy("cuzk.example.toml");
    // No environment: the file alone must be a valid config.
    let cfg = DaemonConfig::load(Some(&path), |_| None).unwrap_or_else(|e| panic!("{} does not load: {e}", path.display()));
    cfg.validate().unwrap();
    // The file says every key is set to its default (its comments quote them): a changed
    // default must change the example too.
    assert_eq!(cfg, DaemonConfig::default(), "deploy/cuzk.example.toml no longer equals the defaults (update its values and comments)");

    let mut want = BTreeSet::new();
    dotted_keys(&DaemonConfig::default().render().parse::<toml::Table>().unwrap(), "", &mut want);
    assert!(want.contains("listen") && want.contains("engine.synthesis_workers"), "render() changed shape: {want:?}");
    let text = read("cuzk.example.toml");
    let mut have = BTreeSet::new();
    dotted_keys(&text.parse::<toml::Table>().unwrap(), "", &mut have);
    let missing: Vec<_> = want.difference(&have).collect();
    assert!(
        missing.is_empty(),
        "deploy/cuzk.example.toml does not set (and explain) these config keys that `cuzk daemon --print-config` prints: \
         {missing:?}; add each with a comment line above it (also to docs/DAEMON.md's key table)"
    );
    let comments = commented_keys(&text);
    let bare: Vec<_> = want.iter().filter(|k| comments.get(*k) != Some(&true)).collect();
    assert!(bare.is_empty(), "deploy/cuzk.example.toml: no comment right above {bare:?}");
}

/// The values of `key=` lines in a systemd unit file, in order.
fn unit_values(unit: &str, key: &str) -> Vec<String> {
    unit.lines().filter_map(|l| l.trim().strip_prefix(key).and_then(|r| r.strip_prefix('='))).map(|v| v.trim().to_string()).collect()
}

#[test]
fn the_unit_the_metrics_exporter_and_the_example_config_agree() {
    let cfg = DaemonConfig::load(Some(&deploy("cuzk.example.toml")), |_| None).unwrap();
    let unit = read("cuzk.service");
    let exporter = read("cuzk-metrics.service");
    // The socket lives in the unit's RuntimeDirectory, and the exporter dials it.
    let runtime = unit_values(&unit, "RuntimeDirectory");
    assert_eq!(runtime, ["cuzk"], "cuzk.service: RuntimeDirectory");
    assert!(cfg.listen.starts_with("unix:///run/cuzk/"), "the example listens on {} (not in RuntimeDirectory=/run/cuzk)", cfg.listen);
    assert_eq!(
        unit_values(&exporter, "Environment").iter().find_map(|e| e.strip_prefix("CUZK_ADDR=")),
        Some(cfg.listen.as_str()),
        "cuzk-metrics.service: CUZK_ADDR is not the example config's listen address"
    );
    // The unit starts the daemon with the config the example is installed as, and both units
    // use the same parameter directory.
    assert!(unit_values(&unit, "ExecStart").iter().any(|e| e.ends_with("daemon --config /etc/cuzk/cuzk.toml")), "cuzk.service: ExecStart");
    let params = |u: &str| unit_values(u, "Environment").into_iter().find(|e| e.starts_with("FIL_PROOFS_PARAMETER_CACHE="));
    assert!(params(&unit).is_some() && params(&unit) == params(&exporter), "FIL_PROOFS_PARAMETER_CACHE differs between the units");
    // Draining: systemd must wait at least as long as the daemon's own grace period.
    let stop = unit_values(&unit, "TimeoutStopSec");
    let secs: u64 = stop.first().and_then(|v| v.strip_suffix("min")).and_then(|m| m.parse::<u64>().ok()).map(|m| m * 60).unwrap_or(0);
    assert!(secs > cuzk_daemon::server::SHUTDOWN_GRACE.as_secs(), "TimeoutStopSec={stop:?} is not above the daemon's drain grace");
}

// ---------------------------------------------------------------------------------------------
// The Grafana dashboard.

#[derive(Debug)]
enum Json {
    Null,
    Bool(bool),
    Num(f64),
    Str(String),
    Arr(Vec<Json>),
    Obj(Vec<(String, Json)>),
}

impl Json {
    fn get(&self, key: &str) -> Option<&Json> {
        match self {
            Json::Obj(kv) => kv.iter().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }

    fn str(&self) -> Option<&str> {
        match self {
            Json::Str(s) => Some(s),
            _ => None,
        }
    }

    fn arr(&self) -> &[Json] {
        match self {
            Json::Arr(v) => v,
            _ => &[],
        }
    }
}

/// A strict RFC 8259 reader: one value, no trailing bytes, no duplicate keys.
struct Reader<'a> {
    s: &'a [u8],
    i: usize,
}

impl Reader<'_> {
    fn parse(text: &str) -> Result<Json, String> {
        let mut r = Reader { s: text.as_bytes(), i: 0 };
        let v = r.value(0)?;
        r.ws();
        if r.i != r.s.len() {
            return Err(r.err("trailing bytes after the value"));
        }
        Ok(v)
    }

    fn err(&self, why: &str) -> String {
        let before = &self.s[..self.i.min(self.s.len())];
        let line = before.iter().filter(|&&b| b == b'\n').count() + 1;
        let col = before.iter().rev().take_while(|&&b| b != b'\n').count() + 1;
        format!("line {line} column {col}: {why}")
    }

    fn ws(&mut self) {
        while self.i < self.s.len() && matches!(self.s[self.i], b' ' | b'\t' | b'\n' | b'\r') {
            self.i += 1;
        }
    }

    fn peek(&self) -> Option<u8> {
        self.s.get(self.i).copied()
    }

    fn eat(&mut self, b: u8) -> Result<(), String> {
        if self.peek() == Some(b) {
            self.i += 1;
            Ok(())
        } else {
            Err(self.err(&format!("expected {:?}", b as char)))
        }
    }

    fn value(&mut self, depth: usize) -> Result<Json, String> {
        if depth > 64 {
            return Err(self.err("nested too deeply"));
        }
        self.ws();
        match self.peek() {
            Some(b'{') => {
                self.i += 1;
                let mut kv: Vec<(String, Json)> = Vec::new();
                self.ws();
                if self.peek() == Some(b'}') {
                    self.i += 1;
                    return Ok(Json::Obj(kv));
                }
                loop {
                    self.ws();
                    let k = self.string()?;
                    if kv.iter().any(|(x, _)| *x == k) {
                        return Err(self.err(&format!("duplicate key {k:?}")));
                    }
                    self.ws();
                    self.eat(b':')?;
                    let v = self.value(depth + 1)?;
                    kv.push((k, v));
                    self.ws();
                    match self.peek() {
                        Some(b',') => self.i += 1,
                        Some(b'}') => {
                            self.i += 1;
                            return Ok(Json::Obj(kv));
                        }
                        _ => return Err(self.err("expected ',' or '}'")),
                    }
                }
            }
            Some(b'[') => {
                self.i += 1;
                let mut v = Vec::new();
                self.ws();
                if self.peek() == Some(b']') {
                    self.i += 1;
                    return Ok(Json::Arr(v));
                }
                loop {
                    v.push(self.value(depth + 1)?);
                    self.ws();
                    match self.peek() {
                        Some(b',') => self.i += 1,
                        Some(b']') => {
                            self.i += 1;
                            return Ok(Json::Arr(v));
                        }
                        _ => return Err(self.err("expected ',' or ']'")),
                    }
                }
            }
            Some(b'"') => Ok(Json::Str(self.string()?)),
            Some(b't') => self.word("true", Json::Bool(true)),
            Some(b'f') => self.word("false", Json::Bool(false)),
            Some(b'n') => self.word("null", Json::Null),
            Some(b'-' | b'0'..=b'9') => self.number(),
            _ => Err(self.err("expected a value")),
        }
    }

    fn word(&mut self, w: &str, v: Json) -> Result<Json, String> {
        if self.s[self.i..].starts_with(w.as_bytes()) {
            self.i += w.len();
            Ok(v)
        } else {
            Err(self.err("expected true, false or null"))
        }
    }

    fn number(&mut self) -> Result<Json, String> {
        let start = self.i;
        let digits = |r: &mut Self| {
            let s = r.i;
            while matches!(r.peek(), Some(b'0'..=b'9')) {
                r.i += 1;
            }
            r.i > s
        };
        if self.peek() == Some(b'-') {
            self.i += 1;
        }
        if self.peek() == Some(b'0') {
            self.i += 1;
        } else if !digits(self) {
            return Err(self.err("bad number"));
        }
        if self.peek() == Some(b'.') {
            self.i += 1;
            if !digits(self) {
                return Err(self.err("bad fraction"));
            }
        }
        if matches!(self.peek(), Some(b'e' | b'E')) {
            self.i += 1;
            if matches!(self.peek(), Some(b'+' | b'-')) {
                self.i += 1;
            }
            if !digits(self) {
                return Err(self.err("bad exponent"));
            }
        }
        let t = std::str::from_utf8(&self.s[start..self.i]).unwrap();
        t.parse().map(Json::Num).map_err(|_| self.err("bad number"))
    }

    fn hex4(&mut self) -> Result<u32, String> {
        let h = self.s.get(self.i..self.i + 4).ok_or_else(|| self.err("short \\u escape"))?;
        let v = u32::from_str_radix(std::str::from_utf8(h).map_err(|_| self.err("bad \\u escape"))?, 16)
            .map_err(|_| self.err("bad \\u escape"))?;
        self.i += 4;
        Ok(v)
    }

    fn string(&mut self) -> Result<String, String> {
        self.eat(b'"')?;
        let mut out = String::new();
        loop {
            let start = self.i;
            while self.i < self.s.len() && !matches!(self.s[self.i], b'"' | b'\\' | 0..=0x1f) {
                self.i += 1;
            }
            out.push_str(std::str::from_utf8(&self.s[start..self.i]).map_err(|_| self.err("not UTF-8"))?);
            match self.peek() {
                Some(b'"') => {
                    self.i += 1;
                    return Ok(out);
                }
                Some(b'\\') => {
                    self.i += 1;
                    let c = self.peek().ok_or_else(|| self.err("unfinished escape"))?;
                    self.i += 1;
                    match c {
                        b'"' => out.push('"'),
                        b'\\' => out.push('\\'),
                        b'/' => out.push('/'),
                        b'b' => out.push('\u{8}'),
                        b'f' => out.push('\u{c}'),
                        b'n' => out.push('\n'),
                        b'r' => out.push('\r'),
                        b't' => out.push('\t'),
                        b'u' => {
                            let mut cp = self.hex4()?;
                            if (0xd800..0xdc00).contains(&cp) {
                                self.eat(b'\\')?;
                                self.eat(b'u')?;
                                let lo = self.hex4()?;
                                if !(0xdc00..0xe000).contains(&lo) {
                                    return Err(self.err("unpaired surrogate"));
                                }
                                cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
                            }
                            out.push(char::from_u32(cp).ok_or_else(|| self.err("bad code point"))?);
                        }
                        _ => return Err(self.err("bad escape")),
                    }
                }
                Some(_) => return Err(self.err("control character in a string")),
                None => return Err(self.err("unterminated string")),
            }
        }
    }
}

/// The metric names the daemon exports: the `# TYPE` lines of its metrics text (every metric
/// has one, whether or not it has samples yet).
fn exported_metrics() -> BTreeSet<String> {
    let text = cuzk_daemon::metrics::render(&cuzk_daemon::metrics::Snapshot::default());
    let names: BTreeSet<String> =
        text.lines().filter_map(|l| l.strip_prefix("# TYPE ")).filter_map(|l| l.split_whitespace().next()).map(String::from).collect();
    assert!(names.len() >= 10, "too few metrics found in the metrics text:\n{text}");
    names
}

/// PromQL words that are not metric names: aggregations, set and grouping keywords.
const PROMQL_WORDS: &[&str] = &[
    "sum",
    "min",
    "max",
    "avg",
    "group",
    "stddev",
    "stdvar",
    "count",
    "count_values",
    "bottomk",
    "topk",
    "quantile",
    "by",
    "without",
    "on",
    "ignoring",
    "group_left",
    "group_right",
    "bool",
    "and",
    "or",
    "unless",
    "offset",
    "atan2",
    "inf",
    "nan",
];

/// The metric names a PromQL expression selects: identifiers outside label matchers `{…}`,
/// ranges `[…]`, strings and grouping lists, that are neither functions (followed by `(`) nor
/// keywords; Grafana variables (`$x`, `${x}`) are skipped.
fn promql_metrics(expr: &str) -> Vec<String> {
    let b = expr.as_bytes();
    let ident = |c: u8| c.is_ascii_alphanumeric() || c == b'_' || c == b':';
    let skip_to = |mut i: usize, close: u8| {
        while i < b.len() && b[i] != close {
            if b[i] == b'"' || b[i] == b'\'' {
                let q = b[i];
                i += 1;
                while i < b.len() && b[i] != q {
                    i += if b[i] == b'\\' { 2 } else { 1 };
                }
            }
            i += 1;
        }
        i + 1
    };
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        match c {
            b'{' => i = skip_to(i + 1, b'}'),
            b'[' => i = skip_to(i + 1, b']'),
            b'"' | b'\'' | b'`' => i = skip_to(i + 1, c),
            b'$' => {
                i += 1;
                if b.get(i) == Some(&b'{') {
                    i = skip_to(i + 1, b'}');
                }
                while i < b.len() && ident(b[i]) {
                    i += 1;
                }
            }
            b'0'..=b'9' | b'.' => {
                while i < b.len() && (ident(b[i]) || b[i] == b'.') {
                    i += 1;
                }
            }
            _ if ident(c) => {
                let start = i;
                while i < b.len() && ident(b[i]) {
                    i += 1;
                }
                let word = &expr[start..i];
                let mut j = i;
                while j < b.len() && b[j] == b' ' {
                    j += 1;
                }
                let call = b.get(j) == Some(&b'(');
                if matches!(word, "by" | "without" | "on" | "ignoring" | "group_left" | "group_right") {
                    if call {
                        i = skip_to(j + 1, b')');
                    }
                } else if !call && !PROMQL_WORDS.contains(&word) {
                    out.push(word.to_string());
                }
            }
            _ => i += 1,
        }
    }
    out
}

/// Every `expr` string in the document, with the title of the panel it belongs to.
fn exprs(v: &Json, panel: &str, out: &mut Vec<(String, String)>) {
    match v {
        Json::Obj(kv) => {
            let title = v.get("title").and_then(Json::str).unwrap_or(panel);
            for (k, x) in kv {
                match (k.as_str(), x) {
                    ("expr", Json::Str(e)) => out.push((title.to_string(), e.clone())),
                    _ => exprs(x, title, out),
                }
            }
        }
        Json::Arr(xs) => xs.iter().for_each(|x| exprs(x, panel, out)),
        _ => {}
    }
}

fn dashboard() -> Json {
    let text = read("grafana-dashboard.json");
    Reader::parse(&text).unwrap_or_else(|e| panic!("deploy/grafana-dashboard.json is not JSON: {e}"))
}

#[test]
fn the_dashboard_is_json_and_queries_only_exported_metrics() {
    let d = dashboard();
    assert!(d.get("title").and_then(Json::str).is_some_and(|t| !t.is_empty()), "the dashboard has no title");
    assert!(matches!(d.get("schemaVersion"), Some(&Json::Num(v)) if v >= 30.0), "the dashboard has no schemaVersion (Grafana 8+)");
    let panels = d.get("panels").map(Json::arr).unwrap_or_default();
    assert!(!panels.is_empty(), "the dashboard has no panels");
    let exported = exported_metrics();
    let mut found = Vec::new();
    exprs(&d, "", &mut found);
    assert!(!found.is_empty(), "no PromQL expressions (`expr`) in the dashboard");
    let mut unknown = Vec::new();
    for (panel, e) in &found {
        let names = promql_metrics(e);
        assert!(!names.is_empty(), "panel {panel:?}: no metric in {e:?}");
        unknown.extend(names.into_iter().filter(|n| !exported.contains(n)).map(|n| format!("{n} (panel {panel:?}: {e})")));
    }
    // The variables' queries, e.g. label_values(cuzk_uptime_seconds, instance).
    for var in d.get("templating").and_then(|t| t.get("list")).map(Json::arr).unwrap_or_default() {
        let q = var.get("query").and_then(|q| q.str().or_else(|| q.get("query").and_then(Json::str))).unwrap_or("");
        if let Some(args) = q.strip_prefix("label_values(") {
            let first = args.split([',', ')']).next().unwrap_or("").trim();
            let metric = first.split('{').next().unwrap_or("").trim();
            if args.contains(',') && !exported.contains(metric) {
                unknown.push(format!("{metric} (variable query {q:?})"));
            }
        }
    }
    assert!(unknown.is_empty(), "the dashboard queries metrics the daemon does not export: {unknown:#?}\nexported: {exported:?}");
}

#[test]
fn every_exported_metric_is_on_the_dashboard() {
    let mut found = Vec::new();
    exprs(&dashboard(), "", &mut found);
    let shown: BTreeSet<String> = found.iter().flat_map(|(_, e)| promql_metrics(e)).collect();
    let missing: Vec<_> = exported_metrics().into_iter().filter(|m| !shown.contains(m)).collect();
    assert!(missing.is_empty(), "no panel of deploy/grafana-dashboard.json shows {missing:?}; add one (and see docs/OPERATING.md)");
}

#[test]
fn the_alert_rules_query_only_exported_metrics() {
    let exported = exported_metrics();
    let text = read("cuzk-alerts.yml");
    let exprs: Vec<&str> =
        text.lines().filter_map(|l| l.trim().strip_prefix("expr:")).map(|e| e.trim().trim_matches(['"', '\''])).collect();
    assert!(exprs.len() >= 3, "deploy/cuzk-alerts.yml: too few `expr:` lines (each expression must stay on one line)");
    for e in exprs {
        let names = promql_metrics(e);
        assert!(!names.is_empty(), "deploy/cuzk-alerts.yml: no metric in {e:?}");
        let unknown: Vec<_> = names.iter().filter(|n| !exported.contains(*n)).collect();
        assert!(unknown.is_empty(), "deploy/cuzk-alerts.yml: {e:?} uses {unknown:?}, which the daemon does not export");
    }
}

#[test]
fn the_promql_reader_finds_metrics_and_only_metrics() {
    assert_eq!(
        promql_metrics(
            r#"sum by (stage) (rate(cuzk_stage_seconds_sum{instance=~"$instance", x="a}b"}[$__rate_interval])) / ignoring(x) cuzk_b"#
        ),
        ["cuzk_stage_seconds_sum", "cuzk_b"]
    );
    assert_eq!(promql_metrics("histogram_quantile(0.9, x_bucket) > bool 1e3 and on (a) up offset 5m"), ["x_bucket", "up"]);
    assert!(Reader::parse(r#"{"a": 1, "a": 2}"#).unwrap_err().contains("duplicate"));
    assert!(Reader::parse(r#"{"a": [1, 2,]}"#).is_err());
    assert!(Reader::parse(r#"{"a": "\ud83d\ude00 -1.5e3"} x"#).unwrap_err().contains("trailing"));
    let Ok(Json::Arr(v)) = Reader::parse(r#" [0, -0.5e-3, "\u00e9", true, null] "#) else { panic!("not an array") };
    assert!(
        matches!(v[..], [Json::Num(z), Json::Num(x), Json::Str(ref e), Json::Bool(true), Json::Null] if z == 0.0 && x == -0.0005 && e == "é")
    );
}
