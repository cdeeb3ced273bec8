#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| loom_bridge::fuzzing::mime_to_envelope(data));
