//! The two tiktoken vocabularies every count is made with (bundled in tiktoken-rs, offline).

use std::fmt;
use std::sync::OnceLock;

use tiktoken_rs::CoreBPE;

/// Names of the tokenizers, in the order of [`Tokenizers::count`]'s result.
pub const TOKENIZER_NAMES: [&str; 2] = ["o200k_base", "cl100k_base"];

/// Token counts of one text, one per tokenizer, in [`TOKENIZER_NAMES`] order.
pub type Counts = [usize; 2];

/// o200k_base (GPT-4o family) and cl100k_base (GPT-4/3.5); slow to build, so build once.
pub struct Tokenizers {
    o200k: CoreBPE,
    cl100k: CoreBPE,
}

impl fmt::Debug for Tokenizers {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Tokenizers")
            .field("names", &TOKENIZER_NAMES)
            .finish()
    }
}

impl Tokenizers {
    /// Builds both vocabularies from the data bundled in tiktoken-rs.
    pub fn new() -> Result<Tokenizers, String> {
        let o200k = tiktoken_rs::o200k_base().map_err(|e| format!("o200k_base: {e}"))?;
        let cl100k = tiktoken_rs::cl100k_base().map_err(|e| format!("cl100k_base: {e}"))?;
        Ok(Tokenizers { o200k, cl100k })
    }

    /// One process-wide instance (tests and the binary share it).
    pub fn shared() -> &'static Tokenizers {
        static SHARED: OnceLock<Tokenizers> = OnceLock::new();
        SHARED.get_or_init(|| {
            Tokenizers::new()
                .expect("tiktoken-rs bundles its vocabularies; building them cannot fail")
        })
    }

    /// Token counts of `text` as ordinary text: special-token strings count as plain text.
    pub fn count(&self, text: &str) -> Counts {
        [
            self.o200k.encode_ordinary(text).len(),
            self.cl100k.encode_ordinary(text).len(),
        ]
    }
}
