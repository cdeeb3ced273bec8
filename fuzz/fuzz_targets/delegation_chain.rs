#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| loom_protocol::fuzzing::delegation_chain(data));
