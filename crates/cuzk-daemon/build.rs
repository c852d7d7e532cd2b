//! Compiles `proto/cuzk.proto` with protox (a protobuf compiler in Rust, so no `protoc` has to
//! be installed) and generates the tonic server and client.

fn main() -> Result<(), Box<dyn std::error::Error>> {
    println!("cargo:rerun-if-changed=proto/cuzk.proto");
    let fds = protox::compile(["proto/cuzk.proto"], ["proto"])?;
    tonic_build::configure().build_server(true).build_client(true).compile_fds(fds)?;
    Ok(())
}
