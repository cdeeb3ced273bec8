//! `loom-process`: validate, run and test process packages.

fn main() {
    eprintln!("loom-process: no commands yet");
    std::process::exit(2);
}
