//! The server's modules import one another without cycles: every `use super::...` and
//! `crate::server::...` path in the files under `src/server` is resolved to the module it names,
//! and the graph of those edges (a module's use of its own ancestors left out, as that is the
//! module tree, not a dependency between siblings) must have no cycle.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

type Module = Vec<String>;

fn modules(dir: &Path, prefix: &Module, out: &mut BTreeMap<Module, String>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .expect("read server folder")
        .map(|e| e.expect("entry").path())
        .collect();
    entries.sort();
    for path in entries {
        let name = path
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or("")
            .to_owned();
        if path.is_dir() {
            let mut inner = prefix.clone();
            inner.push(name);
            modules(&path, &inner, out);
        } else if let Some(stem) = name.strip_suffix(".rs") {
            let mut module = prefix.clone();
            if stem != "mod" {
                module.push(stem.to_owned());
            }
            let text = std::fs::read_to_string(&path).expect("read module");
            out.entry(module)
                .and_modify(|t| t.push_str(&text))
                .or_insert(text);
        }
    }
}

/// The paths a `use` tree names, from just after `super::`/`crate::server::` to its end: a
/// group `a::{b, c::d}` yields `a::b` and `a::c::d` (first segments are enough to find the
/// module, so deeper groups are cut short).
fn paths(rest: &str) -> Vec<Vec<String>> {
    let is_ident = |c: char| c.is_alphanumeric() || c == '_';
    let mut segs = Vec::new();
    let mut s = rest;
    loop {
        let end = s.find(|c: char| !is_ident(c)).unwrap_or(s.len());
        if end == 0 {
            break;
        }
        segs.push(s[..end].to_owned());
        s = &s[end..];
        if let Some(next) = s.strip_prefix("::") {
            s = next;
        } else {
            break;
        }
    }
    let mut out = vec![segs.clone()];
    if let Some(group) = s.strip_prefix('{') {
        let mut depth = 0;
        let mut item = String::new();
        for c in group.chars() {
            match c {
                '{' => depth += 1,
                '}' if depth == 0 => break,
                '}' => depth -= 1,
                _ => {}
            }
            if c == ',' && depth == 0 {
                out.extend(
                    paths(item.trim())
                        .into_iter()
                        .map(|p| [segs.clone(), p].concat()),
                );
                item.clear();
            } else {
                item.push(c);
            }
        }
        out.extend(
            paths(item.trim())
                .into_iter()
                .map(|p| [segs.clone(), p].concat()),
        );
    }
    out
}

fn edges(all: &BTreeMap<Module, String>) -> BTreeMap<Module, BTreeSet<Module>> {
    let mut graph = BTreeMap::new();
    for (module, text) in all {
        let mut targets = BTreeSet::new();
        let code: String = text
            .lines()
            .filter(|l| !l.trim_start().starts_with("//"))
            .collect::<Vec<_>>()
            .join("\n");
        let bytes = code.as_bytes();
        let mut i = 0;
        while i < code.len() {
            if !code.is_char_boundary(i) {
                i += 1;
                continue;
            }
            let starts_path = i == 0 || {
                let b = bytes[i - 1];
                !(b.is_ascii_alphanumeric() || b == b'_' || b == b':')
            };
            let (base, rest) = if !starts_path {
                i += 1;
                continue;
            } else if code[i..].starts_with("crate::server::") {
                (Vec::new(), &code[i + "crate::server::".len()..])
            } else if code[i..].starts_with("super::") {
                let mut base = module.clone();
                let mut rest = &code[i..];
                while let Some(r) = rest.strip_prefix("super::") {
                    base.pop();
                    rest = r;
                }
                (base, rest)
            } else {
                i += 1;
                continue;
            };
            for path in paths(rest) {
                let full = [base.clone(), path].concat();
                let target = (1..=full.len())
                    .rev()
                    .map(|n| full[..n].to_vec())
                    .find(|m| all.contains_key(m));
                if let Some(target) = target
                    && !module.starts_with(&target)
                {
                    targets.insert(target);
                }
            }
            i += 1;
        }
        graph.insert(module.clone(), targets);
    }
    graph
}

/// Modules on a cycle, each cycle as the strongly connected set (Tarjan).
fn cycles(graph: &BTreeMap<Module, BTreeSet<Module>>) -> Vec<Vec<String>> {
    struct Tarjan<'a> {
        graph: &'a BTreeMap<Module, BTreeSet<Module>>,
        index: BTreeMap<&'a Module, usize>,
        low: BTreeMap<&'a Module, usize>,
        stack: Vec<&'a Module>,
        found: Vec<Vec<String>>,
    }
    impl<'a> Tarjan<'a> {
        fn visit(&mut self, v: &'a Module) {
            let n = self.index.len();
            self.index.insert(v, n);
            self.low.insert(v, n);
            self.stack.push(v);
            for w in &self.graph[v] {
                if !self.index.contains_key(w) {
                    self.visit(w);
                    let low = self.low[v].min(self.low[w]);
                    self.low.insert(v, low);
                } else if self.stack.contains(&w) {
                    let low = self.low[v].min(self.index[w]);
                    self.low.insert(v, low);
                }
            }
            if self.low[v] == self.index[v] {
                let mut component = Vec::new();
                while let Some(w) = self.stack.pop() {
                    component.push(w.join("::"));
                    if w == v {
                        break;
                    }
                }
                if component.len() > 1 {
                    component.sort();
                    self.found.push(component);
                }
            }
        }
    }
    let mut t = Tarjan {
        graph,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        found: Vec::new(),
    };
    for v in graph.keys() {
        if !t.index.contains_key(v) {
            t.visit(v);
        }
    }
    t.found
}

#[test]
fn server_modules_import_one_another_without_cycles() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/server");
    let mut all = BTreeMap::new();
    modules(&dir, &Vec::new(), &mut all);
    let graph = edges(&all);
    assert!(
        graph.values().map(BTreeSet::len).sum::<usize>() > 50,
        "the scan found too few imports to be reading the server's modules"
    );
    let found = cycles(&graph);
    assert!(
        found.is_empty(),
        "import cycles between server modules: {found:?}"
    );
}

#[test]
fn a_cycle_is_found() {
    let mut all = BTreeMap::new();
    all.insert(vec!["a".to_owned()], "use super::b::{x, y};".to_owned());
    all.insert(
        vec!["b".to_owned()],
        "fn f() { crate::server::a::g() }".to_owned(),
    );
    all.insert(vec!["c".to_owned()], "use super::a;".to_owned());
    assert_eq!(
        cycles(&edges(&all)),
        vec![vec!["a".to_owned(), "b".to_owned()]]
    );
}
