//! [`AppState`]: what every handler shares.

use std::sync::Arc;
use std::time::Duration;

use axum::extract::FromRef;
use citeflow_index::IndexError;
use citeflow_store::Store;
use tokio::sync::watch;

use crate::budget::BodyBudget;
pub(crate) use crate::ids::random_id;
use crate::library::Library;
use crate::metrics::Metrics;
use crate::quota::StreamQuota;
use crate::settings::ServerSettings;
use crate::unrecorded::Unrecorded;

/// The shared state of the router: settings, store, book index, upstream client, metrics.
#[derive(Clone)]
pub struct AppState {
    pub(crate) settings: Arc<ServerSettings>,
    pub(crate) store: Arc<dyn Store>,
    /// The book index of [`ServerSettings::with_index`], if one is set.
    pub(crate) books: Option<Arc<Library>>,
    pub(crate) http: reqwest::Client,
    pub(crate) metrics: Arc<Metrics>,
    pub(crate) shutdown: watch::Receiver<bool>,
    /// Stream failures the store has not taken yet.
    pub(crate) unrecorded: Arc<Unrecorded>,
    /// Answers running per key.
    pub(crate) quota: Arc<StreamQuota>,
    /// The last answer of the store's write probe (`/readyz`).
    pub(crate) write_probe: Arc<WriteProbe>,
    /// The memory budget of request bodies being read.
    pub(crate) body_budget: Arc<BodyBudget>,
    shutdown_tx: Arc<watch::Sender<bool>>,
}

impl std::fmt::Debug for AppState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AppState")
            .field("settings", &self.settings)
            .finish_non_exhaustive()
    }
}

impl AppState {
    /// State over this store, with the book index of the settings opened (see
    /// [`AppState::try_new`]).
    ///
    /// # Panics
    /// If the TLS backend of the upstream client cannot be initialised, or the settings name
    /// a book index that cannot be opened.
    pub fn new(settings: ServerSettings, store: Arc<dyn Store>) -> Self {
        match AppState::try_new(settings, store) {
            Ok(state) => state,
            Err(e) => panic!("{e}"),
        }
    }

    /// State over this store; opens (or creates) the book index the settings name.
    ///
    /// # Errors
    /// [`IndexError`] when the index directory cannot be created or opened.
    ///
    /// # Panics
    /// If the TLS backend of the upstream client cannot be initialised.
    pub fn try_new(settings: ServerSettings, store: Arc<dyn Store>) -> Result<Self, IndexError> {
        let books = match &settings.index {
            Some(dir) => Some(Arc::new(Library::open(dir, &settings.limits)?)),
            None => None,
        };
        crate::tls::install_crypto_provider();
        let http = reqwest::Client::builder()
            .connect_timeout(Duration::from_millis(
                settings.limits.upstream_connect_timeout_ms,
            ))
            .pool_max_idle_per_host(1024)
            .build()
            .expect("the upstream http client can be built");
        let (tx, rx) = watch::channel(false);
        let metrics = Arc::new(Metrics::for_settings(&settings));
        let body_budget = Arc::new(BodyBudget::new(&settings.limits));
        Ok(AppState {
            settings: Arc::new(settings),
            store,
            books,
            http,
            metrics,
            shutdown: rx,
            unrecorded: Arc::new(Unrecorded::default()),
            quota: Arc::new(StreamQuota::default()),
            write_probe: Arc::new(WriteProbe::default()),
            body_budget,
            shutdown_tx: Arc::new(tx),
        })
    }

    /// The metrics.
    pub fn metrics(&self) -> &Metrics {
        &self.metrics
    }

    /// Bytes of the body budget ([`Limits::body_budget_bytes`]) held now by request bodies
    /// being read.
    ///
    /// [`Limits::body_budget_bytes`]: crate::Limits::body_budget_bytes
    pub fn body_bytes_held(&self) -> usize {
        self.body_budget.held_bytes()
    }

    /// The store.
    pub fn store(&self) -> &Arc<dyn Store> {
        &self.store
    }

    /// Ends every open SSE response with a `shutting_down` error event (the generations keep
    /// running until the runtime stops; their streams are not marked finished).
    pub fn begin_shutdown(&self) {
        let _ = self.shutdown_tx.send(true);
    }
}

/// The settings as a substate: what the [`Owner`](crate::tenancy::Owner) extractor reads.
impl FromRef<AppState> for Arc<ServerSettings> {
    fn from_ref(state: &AppState) -> Self {
        Arc::clone(&state.settings)
    }
}

/// How long `/readyz` keeps the answer of the store's write probe.
pub(crate) const WRITE_PROBE_TTL: Duration = Duration::from_secs(1);

/// The store's write probe ([`Store::probe_write`]) as `/readyz` runs it: at most one probe
/// at a time, its answer kept for [`WRITE_PROBE_TTL`], so that frequent checks cost the store
/// one small write a second.
#[derive(Default)]
pub(crate) struct WriteProbe {
    last: tokio::sync::Mutex<Option<(std::time::Instant, Result<(), String>)>>,
}

impl WriteProbe {
    /// Whether the store takes writes: the kept answer while it is fresh, else a new probe
    /// (given `timeout` to answer).
    pub(crate) async fn check(&self, store: &dyn Store, timeout: Duration) -> Result<(), String> {
        let mut last = self.last.lock().await;
        if let Some((at, answer)) = last.as_ref() {
            if at.elapsed() < WRITE_PROBE_TTL {
                return answer.clone();
            }
        }
        let answer = match tokio::time::timeout(timeout, store.probe_write(now_ms())).await {
            Ok(Ok(())) => Ok(()),
            Ok(Err(e)) => Err(format!("cannot write: {e}")),
            Err(_) => Err(format!(
                "a write was not taken within {} ms",
                timeout.as_millis()
            )),
        };
        *last = Some((std::time::Instant::now(), answer.clone()));
        answer
    }
}

/// Milliseconds since the Unix epoch.
pub(crate) fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}
