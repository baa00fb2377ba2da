//! The inventory as the console holds it. A fleet of 200,000 hosts must fit
//! in memory once and be filtered within a frame, so:
//!
//! - the hosts are one immutable [`Fleet`] behind an `Arc`, shared by the
//!   model, the executor (which resolves jump hosts with it) and workers;
//!   a reload builds a new one on a worker and swaps it in;
//! - what the filter matches against (name, address and tags) is laid out
//!   once per load, as nucleo reads it, instead of once per host per keystroke;
//! - a query that only adds characters to the previous one is matched
//!   against the previous answer only ([`narrows`]);
//! - hosts that look alike to the query (the same text around the characters it
//!   holds, other letters and digits aside) are scored once per scan (`shapes`):
//!   the first keystrokes of a query keep most hosts, and scoring each of them
//!   was the slowest keystroke;
//! - [`filter`] is pure and can be stopped part-way, so a large scan can run
//!   on a worker while the newest query wins (see `update::filter`).

use std::collections::BTreeMap;
use std::sync::Arc;

use nucleo_matcher::Utf32String;
use nucleo_matcher::pattern::{CaseMatching, Normalization, Pattern};

use crate::inventory::Host;

mod shapes;

/// The hosts loaded from the store, with what the filter and the tag picker
/// need computed once.
#[derive(Default)]
pub struct Fleet {
    /// In the store's order (localhost first, then by name); shared with the executor
    /// (an `Arc<Vec>`: made from the `Vec` read without copying 200,000 hosts once more).
    hosts: Arc<Vec<Host>>,
    /// Per host, `name address tag tag…`: the text the fuzzy filter scores.
    keys: Box<[Utf32String]>,
    /// Every tag with its host count, by name (the tag picker).
    tags: Vec<(String, usize)>,
}

impl std::fmt::Debug for Fleet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Fleet({} hosts)", self.hosts.len())
    }
}

impl std::ops::Deref for Fleet {
    type Target = [Host];
    fn deref(&self) -> &[Host] {
        &self.hosts
    }
}

impl Fleet {
    /// Lays out `hosts` for the console (linear in the fleet: run it on a worker for a large one).
    pub fn new(mut hosts: Vec<Host>) -> Self {
        hosts.shrink_to_fit();
        let keys = hosts.iter().map(match_key).collect();
        let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
        for tag in hosts.iter().flat_map(|h| h.tags.iter()) {
            *counts.entry(tag.as_str()).or_default() += 1;
        }
        let tags = counts.into_iter().map(|(t, n)| (t.to_string(), n)).collect();
        Self { hosts: Arc::new(hosts), keys, tags }
    }

    /// The hosts, shared: the executor resolves jump hosts with the same copy.
    pub fn shared(&self) -> Arc<Vec<Host>> {
        self.hosts.clone()
    }

    /// Every tag with its host count, by name.
    pub fn tags(&self) -> &[(String, usize)] {
        &self.tags
    }
}

/// What the inventory pane lists: the answer of one filter over one fleet.
/// While a newer answer is computed on a worker, the previous one stays on
/// screen, whole and consistent (its fleet may be the one before a reload).
#[derive(Debug, Clone, Default)]
pub struct Shown {
    /// The fleet the rows point into.
    pub fleet: Arc<Fleet>,
    /// The filter they answer.
    pub query: String,
    /// Indices into `fleet`, best first; `None`: every host, in order (no filter).
    pub rows: Option<Arc<[u32]>>,
}

impl Shown {
    /// Every host of `fleet`, unfiltered.
    pub fn all(fleet: Arc<Fleet>) -> Self {
        Self { fleet, query: String::new(), rows: None }
    }

    /// How many hosts are listed.
    pub fn len(&self) -> usize {
        self.rows.as_ref().map_or(self.fleet.len(), |r| r.len())
    }

    /// Whether none is.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The `i`th host listed.
    pub fn get(&self, i: usize) -> Option<&Host> {
        match &self.rows {
            None => self.fleet.get(i),
            Some(rows) => rows.get(i).and_then(|&r| self.fleet.get(r as usize)),
        }
    }

    /// The fleet index of the `i`th host listed.
    pub fn index(&self, i: usize) -> Option<u32> {
        match &self.rows {
            None => (i < self.fleet.len()).then(|| u32::try_from(i).ok()).flatten(),
            Some(rows) => rows.get(i).copied(),
        }
    }

    /// The hosts listed from the `start`th, at most `count` (what a screen shows).
    pub fn window(&self, start: usize, count: usize) -> Vec<&Host> {
        (start..self.len().min(start.saturating_add(count))).filter_map(|i| self.get(i)).collect()
    }
}

/// A filter too large to answer between two frames, for a worker.
#[derive(Debug)]
pub struct FilterJob {
    /// Its number: only the newest job's answer is taken.
    pub id: u64,
    /// The fleet to filter (the rows of the answer point into it).
    pub fleet: Arc<Fleet>,
    /// The filter text, as typed.
    pub query: String,
    /// The earlier answer it narrows, if any ([`narrows`]).
    pub within: Option<Arc<[u32]>>,
}

impl FilterJob {
    /// Runs it on every core (up to four); `None` when `stop` says a newer job replaced it.
    pub fn run(self, stop: Stop) -> Option<Shown> {
        let threads = std::thread::available_parallelism().map_or(1, |n| n.get()).min(4);
        let rows = filter_on(&self.fleet, &self.query, self.within.as_deref(), stop, threads)?;
        Some(Shown { fleet: self.fleet, query: self.query, rows: Some(rows.into()) })
    }
}

/// What the filter matches a host against: name, address and tags, as the
/// console always matched them (the same text gives the same scores).
fn match_key(h: &Host) -> Utf32String {
    let mut key =
        String::with_capacity(h.name.len() + h.hostname.len() + 2 + h.tags.iter().map(|t| t.len() + 1).sum::<usize>());
    key.push_str(&h.name);
    key.push(' ');
    key.push_str(&h.hostname);
    key.push(' ');
    for (i, tag) in h.tags.iter().enumerate() {
        if i > 0 {
            key.push(' ');
        }
        key.push_str(tag);
    }
    // ASCII (nearly every inventory) stays one byte a character.
    Utf32String::from(key)
}

/// A filter split into its `@tag` words (exact tags every host must have) and the rest (fuzzy).
fn split(query: &str) -> (Vec<&str>, String) {
    let (mut tags, words): (Vec<&str>, Vec<&str>) =
        query.split_whitespace().partition(|w| w.starts_with('@') && w.len() > 1);
    tags.iter_mut().for_each(|t| *t = &t[1..]);
    tags.sort_unstable();
    tags.dedup();
    (tags, words.join(" "))
}

/// Whether every host `new` keeps is among those `old` keeps, so `new` may be
/// matched against `old`'s answer alone: the same tags, and fuzzy words that
/// only add characters. Not when nucleo's operators (`!` negates, `^ $ '`
/// anchor, `\` escapes) are typed: a longer negation keeps more hosts.
pub fn narrows(old: &str, new: &str) -> bool {
    let ((old_tags, old_words), (new_tags, new_words)) = (split(old), split(new));
    old_tags == new_tags && new_words.starts_with(&old_words) && !new_words.contains(['!', '^', '$', '\'', '\\'])
}

/// Hosts scored between two looks at `stop`.
const STOP_EVERY: usize = 2048;

/// Whether a newer query made the answer useless (read from every thread scoring).
pub type Stop<'a> = &'a (dyn Fn() -> bool + Sync);

/// The hosts `query` keeps, as indices into `fleet`: `@tag` words keep hosts
/// with that tag; the rest is matched fuzzily (nucleo) against name, address
/// and tags, best matches first, ties in inventory order. `within` (indices,
/// from an earlier answer this query [`narrows`]) limits the hosts looked at.
/// `None` when `stop` says a newer query made the answer useless.
pub fn filter(fleet: &Fleet, query: &str, within: Option<&[u32]>, stop: Stop) -> Option<Vec<u32>> {
    filter_on(fleet, query, within, stop, 1)
}

/// [`filter`] with the scoring shared by `threads` threads (a worker's job:
/// the answer is the same, sooner).
pub fn filter_on(fleet: &Fleet, query: &str, within: Option<&[u32]>, stop: Stop, threads: usize) -> Option<Vec<u32>> {
    let (tags, words) = split(query);
    let all;
    let candidates: &[u32] = match within {
        Some(rows) => rows,
        None => {
            all = (0..u32::try_from(fleet.hosts.len()).unwrap_or(u32::MAX)).collect::<Vec<u32>>();
            &all
        }
    };
    let has_tags = |i: u32| {
        let host = &fleet.hosts[i as usize];
        tags.iter().all(|t| host.tags.iter().any(|ht| ht == t))
    };
    if words.is_empty() {
        let mut rows = Vec::new();
        for chunk in candidates.chunks(STOP_EVERY) {
            if stop() {
                return None;
            }
            rows.extend(chunk.iter().copied().filter(|&i| has_tags(i)));
        }
        // An earlier answer may be ordered by score; tags alone keep the inventory's order.
        rows.sort_unstable();
        return Some(rows);
    }
    let pattern = Pattern::parse(&words, CaseMatching::Ignore, Normalization::Smart);
    // Each thread ranks its part; the sorted parts are merged at the end.
    let score = |part: &[u32]| -> Option<Vec<u64>> {
        let mut scorer = shapes::Scorer::new(&pattern);
        let mut ranked = Vec::new();
        for chunk in part.chunks(STOP_EVERY) {
            if stop() {
                return None;
            }
            ranked.extend(
                chunk
                    .iter()
                    .filter(|&&i| tags.is_empty() || has_tags(i))
                    .filter_map(|&i| scorer.score(fleet.keys[i as usize].slice(..)).map(|score| rank(score, i))),
            );
        }
        ranked.sort_unstable();
        Some(ranked)
    };
    let threads = threads.clamp(1, candidates.len() / STOP_EVERY + 1);
    let ranked = if threads == 1 {
        score(candidates)?
    } else {
        let parts: Vec<Option<Vec<u64>>> = std::thread::scope(|s| {
            let handles: Vec<_> = candidates
                .chunks(candidates.len().div_ceil(threads))
                .map(|part| s.spawn(move || score(part)))
                .collect();
            // A thread that panicked gives no answer, as a stopped one does.
            handles.into_iter().map(|h| h.join().ok().flatten()).collect()
        });
        let mut ranked = parts.into_iter().collect::<Option<Vec<_>>>()?.concat();
        // A few sorted runs: the stable sort finds them and merges them.
        ranked.sort();
        ranked
    };
    Some(ranked.into_iter().map(|r| (r & u64::from(u32::MAX)) as u32).collect())
}

/// A score and a host's index as one number that sorts best first, then in inventory order
/// (indices are unique, so every order of the same answer sorts to the same rows).
fn rank(score: u32, i: u32) -> u64 {
    (u64::from(u32::MAX - score) << 32) | u64::from(i)
}

#[cfg(test)]
pub(crate) mod tests {
    use nucleo_matcher::{Config, Matcher};

    use super::*;

    /// The filter as the console computed it before fleets: a haystack built per host, per call.
    fn reference(hosts: &[Host], query: &str) -> Vec<String> {
        let (tags, words): (Vec<&str>, Vec<&str>) =
            query.split_whitespace().partition(|w| w.starts_with('@') && w.len() > 1);
        let tagged = hosts.iter().filter(|h| tags.iter().all(|t| h.tags.iter().any(|ht| ht == &t[1..])));
        if words.is_empty() {
            return tagged.map(|h| h.name.clone()).collect();
        }
        let pattern = Pattern::parse(&words.join(" "), CaseMatching::Ignore, Normalization::Smart);
        let mut matcher = Matcher::new(Config::DEFAULT);
        let mut buf = Vec::new();
        let mut scored: Vec<(u32, usize, &Host)> = tagged
            .enumerate()
            .filter_map(|(i, h)| {
                let haystack = format!("{} {} {}", h.name, h.hostname, h.tags.join(" "));
                pattern.score(nucleo_matcher::Utf32Str::new(&haystack, &mut buf), &mut matcher).map(|s| (s, i, h))
            })
            .collect();
        scored.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
        scored.into_iter().map(|(_, _, h)| h.name.clone()).collect()
    }

    /// A fleet like an imported one: roles, environments and regions as names and tags.
    pub(crate) fn generated(count: usize) -> Vec<Host> {
        let (roles, envs, regions) =
            (["web", "db", "cache", "queue"], ["prod", "staging", "dev"], ["eu-west", "us-east", "ap-south"]);
        let mut hosts = vec![Host::localhost()];
        hosts.extend((0..count).map(|i| {
            let (role, env, region) = (roles[i % 4], envs[(i / 4) % 3], regions[(i / 12) % 3]);
            let mut h =
                Host::new(format!("{role}-{region}-{i:06}"), format!("10.{}.{}.{}", i >> 16, (i >> 8) & 255, i & 255));
            for tag in [role, env, region] {
                h.add_tag(tag);
            }
            if i % 97 == 0 {
                h.add_tag("Ünïcode");
            }
            h
        }));
        hosts
    }

    fn names(fleet: &Fleet, rows: &[u32]) -> Vec<String> {
        rows.iter().map(|&i| fleet[i as usize].name.clone()).collect()
    }

    #[test]
    fn a_large_fleet_filters_as_before_on_names_addresses_and_tags() {
        let hosts = generated(20_000);
        let fleet = Fleet::new(hosts.clone());
        for query in [
            "",
            "web",
            "db-us",
            "10.0.3",
            "10.0.3.7",
            "prod",
            "@prod",
            "@prod @web",
            "@db 1",
            "eu 0001",
            "ünï",
            "!web",
            "^cache",
            "zzz",
            "@nope",
        ] {
            let rows = filter(&fleet, query, None, &|| false).unwrap();
            assert_eq!(names(&fleet, &rows), reference(&hosts, query), "query {query:?}");
        }
    }

    #[test]
    fn a_longer_query_narrows_the_previous_answer_to_the_same_result() {
        let hosts = generated(5_000);
        let fleet = Fleet::new(hosts.clone());
        let mut previous: Option<(String, Vec<u32>)> = None;
        for query in ["w", "we", "web", "web ", "web p", "web pr", "web pro", "web prod", "web prod 00", "web prod 001"]
        {
            let within = previous.as_ref().filter(|(old, _)| narrows(old, query)).map(|(_, rows)| rows.as_slice());
            assert!(previous.is_none() || within.is_some(), "{query:?} narrows the query before it");
            let rows = filter(&fleet, query, within, &|| false).unwrap();
            assert_eq!(names(&fleet, &rows), reference(&hosts, query), "query {query:?}");
            previous = Some((query.to_string(), rows));
        }
    }

    #[test]
    fn only_queries_that_keep_fewer_hosts_narrow() {
        assert!(narrows("web", "web0"));
        assert!(narrows("web", "web prod"));
        assert!(narrows("@prod web", "@prod web1"));
        assert!(narrows("", "w"));
        assert!(!narrows("web0", "web"), "a shorter query keeps more");
        assert!(!narrows("!we", "!web"), "a longer negation keeps more");
        assert!(!narrows("@we", "@web"), "tags are exact");
        assert!(!narrows("we", "wa"));
        assert!(!narrows("web", "web$"));
    }

    /// Hosts scored once per shape (`shapes`) answer as the plain scan does, whatever the case,
    /// the alphabet, the tags or the threads.
    #[test]
    fn scoring_by_shape_answers_as_the_plain_scan() {
        let mut hosts = generated(12_000);
        for (i, name) in
            ["WEB-EU-WEST-9", "Web-Eu-West-10", "wéb-eu-1", "db/eu:west;1", "ünïcode-web-2"].iter().enumerate()
        {
            let mut h = Host::new(*name, format!("10.9.9.{i}"));
            h.add_tag("prod");
            hosts.push(h);
        }
        let fleet = Fleet::new(hosts.clone());
        for query in [
            "",
            " ",
            "we",
            "WE",
            "Web-Eu",
            "web-eu-w",
            "ueue",
            "10.",
            "10.0.1",
            "prod 12",
            "eu west",
            "@prod we",
            "@web 10.0",
            "wéb",
            "ünï web",
            "é",
            "db/eu:",
            "web !west",
            "^web eu",
            "west$",
        ] {
            let one = filter(&fleet, query, None, &|| false).unwrap();
            assert_eq!(names(&fleet, &one), reference(&hosts, query), "query {query:?}");
            assert_eq!(filter_on(&fleet, query, None, &|| false, 3).as_ref(), Some(&one), "query {query:?}, 3 threads");
        }
    }

    #[test]
    fn threads_give_the_same_answer() {
        let fleet = Fleet::new(generated(20_000));
        for query in ["web", "eu 01", "@prod d"] {
            let one = filter(&fleet, query, None, &|| false);
            assert_eq!(filter_on(&fleet, query, None, &|| false, 3), one, "query {query:?}");
        }
    }

    #[test]
    fn a_stopped_filter_gives_no_answer() {
        let fleet = Fleet::new(generated(10_000));
        assert_eq!(filter(&fleet, "web", None, &|| true), None);
        assert_eq!(filter(&fleet, "@web", None, &|| true), None);
    }

    #[test]
    fn tags_are_counted_once_per_load() {
        let fleet = Fleet::new(generated(12));
        let tags: Vec<(&str, usize)> = fleet.tags().iter().map(|(t, n)| (t.as_str(), *n)).collect();
        assert!(
            tags.contains(&("web", 3)) && tags.contains(&("prod", 4)) && tags.contains(&("Ünïcode", 1)),
            "{tags:?}"
        );
    }
}
