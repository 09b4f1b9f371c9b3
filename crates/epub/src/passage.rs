pub use std::string::String as ChunkSettings; pub use std::string::String as Passage;
