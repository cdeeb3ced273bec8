#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| loom_node::fuzzing::request_body(data));
