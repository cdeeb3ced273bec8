#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| loom_node::fuzzing::dns_answer(data));
