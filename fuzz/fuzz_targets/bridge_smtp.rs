#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| loom_bridge::fuzzing::smtp_session(data));
