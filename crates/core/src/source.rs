//! Sources, their locators, and the set of sources registered in rounds.

use std::collections::BTreeMap;

use rustc_hash::FxHashMap as HashMap;

use crate::error::SourceError;

/// Where in a document a source is: a book chapter, a CFI, a page.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(default))]
pub struct Locator {
    /// Index of the chapter in the book's table of contents (0-based).
    #[cfg_attr(feature = "serde", serde(skip_serializing_if = "Option::is_none"))]
    pub chapter_index: Option<u32>,
    /// Title of the chapter.
    #[cfg_attr(feature = "serde", serde(skip_serializing_if = "Option::is_none"))]
    pub chapter_title: Option<String>,
    /// EPUB Canonical Fragment Identifier of the passage, e.g. `epubcfi(/6/4!/4/2,/1:0,/1:42)`.
    #[cfg_attr(feature = "serde", serde(skip_serializing_if = "Option::is_none"))]
    pub cfi: Option<String>,
    /// A page label.
    #[cfg_attr(feature = "serde", serde(skip_serializing_if = "Option::is_none"))]
    pub page: Option<String>,
}

impl Locator {
    fn is_empty(&self) -> bool {
        self == &Locator::default()
    }
}

/// A retrieved source the model may cite.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(default))]
pub struct Source {
    /// The internal id the model cites (`source_3`). Required, unique in a session.
    pub id: String,
    /// Title shown in the source list.
    #[cfg_attr(feature = "serde", serde(skip_serializing_if = "Option::is_none"))]
    pub title: Option<String>,
    /// Link shown in the source list.
    #[cfg_attr(feature = "serde", serde(skip_serializing_if = "Option::is_none"))]
    pub url: Option<String>,
    /// Full text given to the model.
    #[cfg_attr(feature = "serde", serde(skip_serializing_if = "Option::is_none"))]
    pub text: Option<String>,
    /// Short excerpt shown on hover.
    #[cfg_attr(feature = "serde", serde(skip_serializing_if = "Option::is_none"))]
    pub snippet: Option<String>,
    /// Where in a document the source is.
    #[cfg_attr(
        feature = "serde",
        serde(
            skip_serializing_if = "Option::is_none",
            deserialize_with = "locator_or_none"
        )
    )]
    pub locator: Option<Locator>,
    /// Explicit canonical key: sources with equal keys share one number (see
    /// [`Sources::key_of`]).
    #[cfg_attr(feature = "serde", serde(skip_serializing_if = "Option::is_none"))]
    pub key: Option<String>,
    /// The number the model was shown for this source (`[101]`) when it is not the source's
    /// position: in rank mode, as soon as any source has a label, numbers in markers are
    /// labels (sparse, from 0, up to 9 digits) instead of positions, and a number that is no
    /// source's label is unresolved.
    #[cfg_attr(feature = "serde", serde(skip_serializing_if = "Option::is_none"))]
    pub label: Option<u32>,
    /// Free metadata, passed through untouched.
    #[cfg_attr(feature = "serde", serde(skip_serializing_if = "BTreeMap::is_empty"))]
    pub metadata: BTreeMap<String, String>,
}

#[cfg(feature = "serde")]
fn locator_or_none<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Locator>, D::Error> {
    use serde::Deserialize;
    let l = Option::<Locator>::deserialize(d)?;
    Ok(l.filter(|l| !l.is_empty()))
}

impl Source {
    /// A source with only an id.
    pub fn new(id: impl Into<String>) -> Self {
        Source {
            id: id.into(),
            ..Source::default()
        }
    }

    /// Sets the title.
    pub fn with_title(mut self, title: impl Into<String>) -> Self {
        self.title = Some(title.into());
        self
    }

    /// Sets the url.
    pub fn with_url(mut self, url: impl Into<String>) -> Self {
        self.url = Some(url.into());
        self
    }

    /// Sets the text.
    pub fn with_text(mut self, text: impl Into<String>) -> Self {
        self.text = Some(text.into());
        self
    }

    /// Sets the locator.
    pub fn with_locator(mut self, locator: Locator) -> Self {
        self.locator = (!locator.is_empty()).then_some(locator);
        self
    }

    /// Sets the explicit canonical key.
    pub fn with_key(mut self, key: impl Into<String>) -> Self {
        self.key = Some(key.into());
        self
    }

    /// Sets the label the model was shown (see [`Source::label`]).
    pub fn with_label(mut self, label: u32) -> Self {
        self.label = Some(label);
        self
    }
}

/// One search round of an agent: its query and the ids it returned.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Round {
    /// 1-based round number.
    pub number: u32,
    /// The query that found the sources.
    pub query: Option<String>,
    /// The ids registered by this round, in the order given.
    pub source_ids: Vec<String>,
}

/// The sources of a session, registered in rounds, in the order the model was shown them.
///
/// A later round may list an id an earlier round registered; the first record is kept, and the
/// id is listed in both rounds.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Sources {
    sources: Vec<Source>,
    /// Round number of each entry of `sources`.
    first_round: Vec<u32>,
    rounds: Vec<Round>,
    #[cfg_attr(feature = "serde", serde(skip))]
    by_id: HashMap<String, usize>,
}

impl Sources {
    /// An empty set.
    pub fn new() -> Self {
        Sources::default()
    }

    /// A set of one round without a query.
    ///
    /// # Errors
    /// As [`Sources::append_round`].
    pub fn from_vec(sources: Vec<Source>) -> Result<Self, SourceError> {
        let mut s = Sources::new();
        s.append_round(None, sources)?;
        Ok(s)
    }

    /// Registers a round of sources and returns its 1-based number.
    ///
    /// # Errors
    /// [`SourceError::EmptyId`] for a source without an id, [`SourceError::DuplicateId`] for
    /// an id given twice in this round. Nothing is registered on error.
    pub fn append_round(
        &mut self,
        query: Option<String>,
        sources: Vec<Source>,
    ) -> Result<u32, SourceError> {
        self.rebuild_index_if_needed();
        let mut seen = std::collections::HashSet::new();
        for (i, s) in sources.iter().enumerate() {
            if s.id.trim().is_empty() {
                return Err(SourceError::EmptyId { index: i });
            }
            if !seen.insert(s.id.as_str()) {
                return Err(SourceError::DuplicateId { id: s.id.clone() });
            }
        }
        let number = self.rounds.len() as u32 + 1;
        let ids = sources.iter().map(|s| s.id.clone()).collect();
        for s in sources {
            if !self.by_id.contains_key(&s.id) {
                self.by_id.insert(s.id.clone(), self.sources.len());
                self.sources.push(s);
                self.first_round.push(number);
            }
        }
        self.rounds.push(Round {
            number,
            query,
            source_ids: ids,
        });
        Ok(number)
    }

    /// Registers one source into the newest round (round 1 if there is none yet) and returns
    /// that round's number: a source a provider cited without a search round of its own. An
    /// id already registered keeps its first record.
    ///
    /// # Errors
    /// [`SourceError::EmptyId`] for a source without an id.
    pub fn append_to_last_round(&mut self, source: Source) -> Result<u32, SourceError> {
        if self.rounds.is_empty() {
            return self.append_round(None, vec![source]);
        }
        if source.id.trim().is_empty() {
            return Err(SourceError::EmptyId { index: 0 });
        }
        self.rebuild_index_if_needed();
        let last = self.rounds.len() - 1;
        let number = self.rounds[last].number;
        if !self.by_id.contains_key(&source.id) {
            self.rounds[last].source_ids.push(source.id.clone());
            self.by_id.insert(source.id.clone(), self.sources.len());
            self.sources.push(source);
            self.first_round.push(number);
        }
        Ok(number)
    }

    /// Fills the title, url and snippet that the registered source with `source.id` lacks
    /// from `source` (a provider's citation often names the title its search result did not).
    /// Fields already set are kept.
    pub fn fill_missing(&mut self, source: &Source) {
        let Some(i) = self.index_of(&source.id) else {
            return;
        };
        let s = &mut self.sources[i];
        if s.title.is_none() {
            s.title.clone_from(&source.title);
        }
        if s.url.is_none() {
            s.url.clone_from(&source.url);
        }
        if s.snippet.is_none() {
            s.snippet.clone_from(&source.snippet);
        }
    }

    fn rebuild_index_if_needed(&mut self) {
        if self.by_id.len() != self.sources.len() {
            self.by_id = self
                .sources
                .iter()
                .enumerate()
                .map(|(i, s)| (s.id.clone(), i))
                .collect();
        }
    }

    /// Restores the id index after deserialisation. Called by the rewriter; harmless twice.
    pub(crate) fn reindex(&mut self) {
        self.rebuild_index_if_needed();
    }

    /// The source with this id.
    pub fn get(&self, id: &str) -> Option<&Source> {
        match self.by_id.get(id) {
            Some(&i) => self.sources.get(i),
            None if self.by_id.len() != self.sources.len() => {
                self.sources.iter().find(|s| s.id == id)
            }
            None => None,
        }
    }

    /// The registration index of the source with this id.
    pub(crate) fn index_of(&self, id: &str) -> Option<usize> {
        match self.by_id.get(id) {
            Some(&i) => Some(i),
            None if self.by_id.len() != self.sources.len() => {
                self.sources.iter().position(|s| s.id == id)
            }
            None => None,
        }
    }

    /// The source at a registration index, with the round that registered it.
    pub(crate) fn at(&self, index: usize) -> Option<(&Source, Option<u32>)> {
        Some((
            self.sources.get(index)?,
            self.first_round.get(index).copied(),
        ))
    }

    /// The n-th source (1-based) in the order the model was shown them.
    pub fn by_rank(&self, rank: u32) -> Option<&Source> {
        self.sources.get((rank as usize).checked_sub(1)?)
    }

    /// Whether any source has a [`Source::label`]: then rank numbers are labels.
    pub fn has_labels(&self) -> bool {
        self.sources.iter().any(|s| s.label.is_some())
    }

    /// The first registered source with this [`Source::label`].
    pub fn by_label(&self, label: u32) -> Option<&Source> {
        self.sources.iter().find(|s| s.label == Some(label))
    }

    /// The registration index of the source a rank number names: its label when any source
    /// has one, else its position.
    pub(crate) fn index_of_rank(&self, n: u32) -> Option<usize> {
        if self.has_labels() {
            self.sources.iter().position(|s| s.label == Some(n))
        } else {
            (n as usize)
                .checked_sub(1)
                .filter(|&i| i < self.sources.len())
        }
    }

    /// The round that first registered this id.
    pub fn round_of(&self, id: &str) -> Option<u32> {
        let i = self.sources.iter().position(|s| s.id == id)?;
        self.first_round.get(i).copied()
    }

    /// All sources in registration order.
    pub fn iter(&self) -> impl Iterator<Item = &Source> {
        self.sources.iter()
    }

    /// The rounds in order.
    pub fn rounds(&self) -> &[Round] {
        &self.rounds
    }

    /// How many sources there are.
    pub fn len(&self) -> usize {
        self.sources.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.sources.is_empty()
    }

    /// The canonical key under which `source` is numbered.
    ///
    /// With `dedupe`: the explicit [`Source::key`] if set; else the normalised url plus the
    /// locator's CFI or page (so two passages of one book keep two numbers); else the id.
    /// Without `dedupe`: the id.
    pub fn key_of(source: &Source, dedupe: bool) -> String {
        if dedupe {
            if let Some(k) = &source.key {
                return format!("key:{k}");
            }
            if let Some(url) = source.url.as_deref().filter(|u| !u.trim().is_empty()) {
                let mut k = String::with_capacity(url.len() + 4);
                k.push_str("url:");
                push_normalized_url(&mut k, url);
                if let Some(loc) = &source.locator {
                    if let Some(cfi) = &loc.cfi {
                        k.push('#');
                        k.push_str(cfi);
                    } else if let Some(p) = &loc.page {
                        k.push_str("#page=");
                        k.push_str(p);
                    }
                }
                return k;
            }
        }
        format!("id:{}", source.id)
    }
}

/// Query parameters that only track where a click came from: dropped from canonical keys.
const TRACKING_PARAMS: [&str; 9] = [
    "fbclid", "gclid", "dclid", "msclkid", "mc_cid", "mc_eid", "igshid", "ref_src", "yclid",
];

/// The canonical form of a url for numbering: scheme and host lower-cased, the default port
/// (`:80` for http, `:443` for https), the `#fragment`, tracking parameters (`utm_*`, `fbclid`,
/// `gclid`, …) and a trailing `/` dropped; the other parameters keep their order.
pub(crate) fn normalize_url(url: &str) -> String {
    let mut out = String::with_capacity(url.len());
    push_normalized_url(&mut out, url);
    out
}

/// [`normalize_url`] written to the end of `out`, with no other allocation.
fn push_normalized_url(out: &mut String, url: &str) {
    let url = url.trim();
    let url = url.split('#').next().unwrap_or(url);
    let (scheme, rest) = match url.find("://") {
        Some(i) => (&url[..i], &url[i + 3..]),
        None => ("", url),
    };
    let (host, path) = match rest.find(['/', '?']) {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, ""),
    };
    let default_port = if scheme.eq_ignore_ascii_case("http") {
        Some(":80")
    } else if scheme.eq_ignore_ascii_case("https") {
        Some(":443")
    } else {
        None
    };
    let host = match default_port {
        Some(p) if host.ends_with(p) => &host[..host.len() - p.len()],
        _ => host,
    };
    let (path, query) = match path.find('?') {
        Some(i) => (&path[..i], Some(&path[i + 1..])),
        None => (path, None),
    };
    let path = path.strip_suffix('/').unwrap_or(path);
    if !scheme.is_empty() {
        push_lowercase(out, scheme);
        out.push_str("://");
    }
    push_lowercase(out, host);
    out.push_str(path);
    let kept = query.into_iter().flat_map(|q| q.split('&')).filter(|kv| {
        let k = kv.split('=').next().unwrap_or("");
        !k.is_empty()
            && !k
                .as_bytes()
                .get(..4)
                .is_some_and(|p| p.eq_ignore_ascii_case(b"utm_"))
            && !TRACKING_PARAMS.iter().any(|t| t.eq_ignore_ascii_case(k))
    });
    for (i, kv) in kept.enumerate() {
        out.push(if i == 0 { '?' } else { '&' });
        out.push_str(kv);
    }
}

/// `text` with ASCII letters lower-cased, at the end of `out`.
fn push_lowercase(out: &mut String, text: &str) {
    if text.bytes().any(|b| b.is_ascii_uppercase()) {
        out.push_str(&text.to_ascii_lowercase());
    } else {
        out.push_str(text);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_are_compared_without_case_default_ports_fragments_or_tracking() {
        let key = |u: &str| Sources::key_of(&Source::new("a").with_url(u), true);
        assert_eq!(
            key("HTTPS://Example.org:443/a/?utm_source=openai&x=1&fbclid=9#top"),
            key("https://example.org/a?x=1")
        );
        assert_eq!(key("http://example.org:80/"), key("http://example.org"));
        assert_ne!(key("http://example.org:8080/"), key("http://example.org"));
        assert_ne!(
            key("https://example.org/a?x=1"),
            key("https://example.org/a?x=2")
        );
        assert_ne!(key("https://example.org/A"), key("https://example.org/a"));
    }

    /// `normalize_url` as first written (an allocation per part): the one-pass version gives
    /// the same text.
    fn normalize_url_by_parts(url: &str) -> String {
        let url = url.trim();
        let url = url.split('#').next().unwrap_or(url);
        let (scheme, rest) = match url.find("://") {
            Some(i) => (url[..i].to_ascii_lowercase(), &url[i + 3..]),
            None => (String::new(), url),
        };
        let (host, path) = match rest.find(['/', '?']) {
            Some(i) => (&rest[..i], &rest[i..]),
            None => (rest, ""),
        };
        let mut host = host.to_ascii_lowercase();
        let default_port = match scheme.as_str() {
            "http" => Some(":80"),
            "https" => Some(":443"),
            _ => None,
        };
        if let Some(p) = default_port {
            if host.ends_with(p) {
                host.truncate(host.len() - p.len());
            }
        }
        let (path, query) = match path.find('?') {
            Some(i) => (&path[..i], Some(&path[i + 1..])),
            None => (path, None),
        };
        let path = path.strip_suffix('/').unwrap_or(path);
        let kept: Vec<&str> = query
            .into_iter()
            .flat_map(|q| q.split('&'))
            .filter(|kv| {
                let k = kv.split('=').next().unwrap_or("").to_ascii_lowercase();
                !k.is_empty() && !k.starts_with("utm_") && !TRACKING_PARAMS.contains(&k.as_str())
            })
            .collect();
        let mut out = String::new();
        if !scheme.is_empty() {
            out.push_str(&scheme);
            out.push_str("://");
        }
        out.push_str(&host);
        out.push_str(path);
        if !kept.is_empty() {
            out.push('?');
            out.push_str(&kept.join("&"));
        }
        out
    }

    #[test]
    fn urls_normalize_in_one_pass_as_by_parts() {
        let urls = [
            "HTTPS://Example.org:443/a/?utm_source=openai&x=1&fbclid=9#top",
            "  http://EXAMPLE.org:80  ",
            "Http://a.b:80/?UTM_x=1&&=2&GCLID=3&Fbclid&y&z=utm_",
            "https://a.b:8443/p/",
            "://host/x",
            "example.org/Path/?q=1#f",
            "mailto:Someone@Example.org",
            "https://é.example/ü?utmé=1&ütm_=2&utm=3",
            "#only",
            "",
            "https://a.b?",
            "https://a.b/?&",
            "file:///C:/X/",
            "https://www.apple.com/newsroom/2025/09/x/?utm_source=openai",
        ];
        for u in urls {
            assert_eq!(normalize_url(u), normalize_url_by_parts(u), "{u:?}");
        }
    }

    #[test]
    fn same_url_shares_a_key_unless_dedupe_is_off() {
        let a = Source::new("a").with_url("HTTPS://Example.org/x/");
        let b = Source::new("b").with_url("https://example.org/x#frag");
        assert_eq!(Sources::key_of(&a, true), Sources::key_of(&b, true));
        assert_ne!(Sources::key_of(&a, false), Sources::key_of(&b, false));
    }

    #[test]
    fn passages_of_one_book_keep_their_own_keys() {
        let loc = |cfi: &str| Locator {
            cfi: Some(cfi.into()),
            ..Locator::default()
        };
        let a = Source::new("a")
            .with_url("book:alice")
            .with_locator(loc("epubcfi(/6/4!/4/2/1:0)"));
        let b = Source::new("b")
            .with_url("book:alice")
            .with_locator(loc("epubcfi(/6/6!/4/2/1:0)"));
        assert_ne!(Sources::key_of(&a, true), Sources::key_of(&b, true));
    }

    #[test]
    fn rounds_keep_first_record_and_list_ids_again() {
        let mut s = Sources::new();
        s.append_round(
            Some("q1".into()),
            vec![Source::new("x").with_title("first")],
        )
        .unwrap();
        let r = s
            .append_round(
                Some("q2".into()),
                vec![Source::new("x").with_title("second"), Source::new("y")],
            )
            .unwrap();
        assert_eq!(r, 2);
        assert_eq!(s.get("x").unwrap().title.as_deref(), Some("first"));
        assert_eq!(s.rounds()[1].source_ids, ["x", "y"]);
        assert_eq!(s.round_of("y"), Some(2));
        assert_eq!(s.by_rank(2).unwrap().id, "y");
    }

    #[test]
    fn bad_rounds_register_nothing() {
        let mut s = Sources::new();
        let e = s
            .append_round(None, vec![Source::new("a"), Source::new("a")])
            .unwrap_err();
        assert_eq!(e.to_string(), "source id a is given twice in one round");
        assert!(s.is_empty() && s.rounds().is_empty());
        assert!(s.append_round(None, vec![Source::new(" ")]).is_err());
    }
}
