#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| loom_conformance::fuzzing::skips(data));
