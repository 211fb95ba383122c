//! No import cycle between the crate's source files.
//!
//! Every `use` (with its `{...}` groups and globs) and every inline `crate::`/`super::`/`self::`
//! path of a file is resolved to the file that *defines* the item, following re-exports
//! (`pub use`) to their source; `mod` declarations are not imports. The resulting file graph
//! must have no cycle (checked with Tarjan's strongly connected components).

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};

/// Module path (`["crate", "policy", "lst"]`) of every source file.
fn source_files(src: &Path) -> BTreeMap<Vec<String>, PathBuf> {
    fn walk(dir: &Path, module: Vec<String>, out: &mut BTreeMap<Vec<String>, PathBuf>) {
        let mut entries: Vec<_> = std::fs::read_dir(dir).unwrap().flatten().collect();
        entries.sort_by_key(|e| e.path());
        for e in entries {
            let p = e.path();
            let name = p.file_stem().unwrap().to_string_lossy().to_string();
            if p.is_dir() {
                let mut m = module.clone();
                m.push(name);
                walk(&p, m, out);
            } else if p.extension().is_some_and(|x| x == "rs") {
                let mut m = module.clone();
                if name != "mod" && name != "lib" {
                    m.push(name);
                }
                out.insert(m, p);
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(src, vec!["crate".to_string()], &mut out);
    out
}

/// The text without comments, string and char literals (replaced by spaces).
fn strip(text: &str) -> String {
    let b: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == '/' && b.get(i + 1) == Some(&'/') {
            while i < b.len() && b[i] != '\n' {
                i += 1;
            }
        } else if b[i] == '/' && b.get(i + 1) == Some(&'*') {
            let mut depth = 0;
            while i < b.len() {
                if b[i] == '/' && b.get(i + 1) == Some(&'*') {
                    depth += 1;
                    i += 2;
                } else if b[i] == '*' && b.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    i += 1;
                }
            }
            out.push(' ');
        } else if b[i] == 'r' && (b.get(i + 1) == Some(&'"') || b.get(i + 1) == Some(&'#')) {
            // Raw string r"..." or r#"..."#.
            let mut j = i + 1;
            let mut hashes = 0;
            while b.get(j) == Some(&'#') {
                hashes += 1;
                j += 1;
            }
            if b.get(j) != Some(&'"') {
                out.push(b[i]);
                i += 1;
                continue;
            }
            j += 1;
            loop {
                if j >= b.len() {
                    break;
                }
                if b[j] == '"' && (0..hashes).all(|k| b.get(j + 1 + k) == Some(&'#')) {
                    j += 1 + hashes;
                    break;
                }
                j += 1;
            }
            out.push(' ');
            i = j;
        } else if b[i] == '"' {
            i += 1;
            while i < b.len() && b[i] != '"' {
                if b[i] == '\\' {
                    i += 1;
                }
                i += 1;
            }
            i += 1;
            out.push(' ');
        } else if b[i] == '\'' && (b.get(i + 2) == Some(&'\'') || (b.get(i + 1) == Some(&'\\'))) {
            // A char literal ('a' or '\n'); lifetimes ('a) have no closing quote nearby.
            let mut j = i + 1;
            if b[j] == '\\' {
                j += 1;
            }
            while j < b.len() && b[j] != '\'' {
                j += 1;
            }
            i = j + 1;
            out.push(' ');
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    out
}

/// Inline `mod name { ... }` blocks: (name, inner text), and the text with them removed.
fn split_inline_modules(text: &str) -> (String, Vec<(String, String)>) {
    let mut outer = String::new();
    let mut inner = Vec::new();
    let chars: Vec<char> = text.chars().collect();
    let mut i = 0;
    let is_ident = |c: char| c.is_alphanumeric() || c == '_';
    while i < chars.len() {
        let at_word = i == 0 || !is_ident(chars[i - 1]);
        if at_word
            && chars[i..].starts_with(&['m', 'o', 'd'])
            && chars.get(i + 3).is_some_and(|c| c.is_whitespace())
        {
            let mut j = i + 3;
            while chars[j].is_whitespace() {
                j += 1;
            }
            let name_start = j;
            while j < chars.len() && is_ident(chars[j]) {
                j += 1;
            }
            let name: String = chars[name_start..j].iter().collect();
            while j < chars.len() && chars[j].is_whitespace() {
                j += 1;
            }
            if chars.get(j) == Some(&'{') {
                let mut depth = 0;
                let body_start = j + 1;
                while j < chars.len() {
                    if chars[j] == '{' {
                        depth += 1;
                    } else if chars[j] == '}' {
                        depth -= 1;
                        if depth == 0 {
                            break;
                        }
                    }
                    j += 1;
                }
                inner.push((name, chars[body_start..j].iter().collect()));
                i = j + 1;
                continue;
            }
        }
        outer.push(chars[i]);
        i += 1;
    }
    (outer, inner)
}

/// Expands a use tree (`a::{b, c::{d, e}}`) into full paths of segments.
fn expand_use(tree: &str) -> Vec<Vec<String>> {
    fn split_top(s: &str) -> Vec<String> {
        let mut parts = Vec::new();
        let mut depth = 0;
        let mut cur = String::new();
        for c in s.chars() {
            match c {
                '{' => {
                    depth += 1;
                    cur.push(c);
                }
                '}' => {
                    depth -= 1;
                    cur.push(c);
                }
                ',' if depth == 0 => parts.push(std::mem::take(&mut cur)),
                _ => cur.push(c),
            }
        }
        parts.push(cur);
        parts
            .into_iter()
            .map(|p| p.trim().to_string())
            .filter(|p| !p.is_empty())
            .collect()
    }
    let t: String = tree.split_whitespace().collect::<Vec<_>>().join(" ");
    let t = t.trim();
    if let Some(open) = t.find('{') {
        let prefix = t[..open].trim().trim_end_matches("::");
        let body = &t[open + 1..t.rfind('}').unwrap()];
        let pre: Vec<String> = if prefix.is_empty() {
            Vec::new()
        } else {
            prefix.split("::").map(|s| s.trim().to_string()).collect()
        };
        let mut out = Vec::new();
        for part in split_top(body) {
            for sub in expand_use(&part) {
                let mut p = pre.clone();
                if sub == ["self"] {
                    out.push(p);
                    continue;
                }
                p.extend(sub);
                out.push(p);
            }
        }
        out
    } else {
        let t = t.split(" as ").next().unwrap();
        vec![t.split("::").map(|s| s.trim().to_string()).collect()]
    }
}

struct Crate {
    files: BTreeMap<Vec<String>, PathBuf>,
    /// Stripped text of each module (file or inline module).
    text: HashMap<Vec<String>, String>,
    /// For each module: its use statements, (is_pub, expanded paths as written).
    uses: HashMap<Vec<String>, Vec<(bool, Vec<String>)>>,
    /// The file each module (file or inline) lives in.
    file_of: HashMap<Vec<String>, Vec<String>>,
}

fn use_statements(text: &str) -> Vec<(bool, Vec<String>)> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(pos) = find_word(rest, "use") {
        let before = rest[..pos].trim_end();
        let is_pub = before.ends_with("pub") || before.ends_with(')') && before.contains("pub(");
        let after = &rest[pos + 3..];
        let end = after.find(';').unwrap_or(after.len());
        for p in expand_use(&after[..end]) {
            out.push((is_pub, p));
        }
        rest = &after[end..];
    }
    out
}

/// The text with its `use ...;` statements blanked (they are read by [`use_statements`]).
fn without_use_statements(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(pos) = find_word(rest, "use") {
        out.push_str(&rest[..pos]);
        let end = rest[pos..].find(';').map_or(rest.len(), |e| pos + e + 1);
        out.push(' ');
        rest = &rest[end..];
    }
    out.push_str(rest);
    out
}

fn find_word(s: &str, w: &str) -> Option<usize> {
    let is_ident = |c: char| c.is_alphanumeric() || c == '_';
    let mut from = 0;
    while let Some(k) = s[from..].find(w) {
        let i = from + k;
        let before_ok = i == 0 || !is_ident(s[..i].chars().last().unwrap());
        let after_ok = s[i + w.len()..]
            .chars()
            .next()
            .is_none_or(|c| c.is_whitespace());
        if before_ok && after_ok {
            return Some(i);
        }
        from = i + w.len();
    }
    None
}

impl Crate {
    fn load(src: &Path) -> Self {
        let files = source_files(src);
        let mut c = Crate {
            files: files.clone(),
            text: HashMap::new(),
            uses: HashMap::new(),
            file_of: HashMap::new(),
        };
        for (module, path) in &files {
            let text = strip(&std::fs::read_to_string(path).unwrap());
            c.add_module(module.clone(), module.clone(), &text);
        }
        c
    }

    fn add_module(&mut self, module: Vec<String>, file: Vec<String>, text: &str) {
        let (outer, inner) = split_inline_modules(text);
        for (name, body) in inner {
            let mut m = module.clone();
            m.push(name);
            self.add_module(m, file.clone(), &body);
        }
        self.uses.insert(module.clone(), use_statements(&outer));
        self.text
            .insert(module.clone(), without_use_statements(&outer));
        self.file_of.insert(module, file);
    }

    fn is_module(&self, m: &[String]) -> bool {
        self.file_of.contains_key(m)
    }

    /// Makes `path` (as written in `module`) absolute; `None` for external crates.
    fn absolute(&self, module: &[String], path: &[String]) -> Option<Vec<String>> {
        let mut cur: Vec<String>;
        let mut rest = path;
        match path.first().map(String::as_str) {
            Some("crate") => {
                cur = vec!["crate".into()];
                rest = &path[1..];
            }
            Some("self") => {
                cur = module.to_vec();
                rest = &path[1..];
            }
            Some("super") => {
                cur = module.to_vec();
                while rest.first().map(String::as_str) == Some("super") {
                    cur.pop();
                    rest = &rest[1..];
                }
            }
            Some(first) => {
                let mut child = module.to_vec();
                child.push(first.to_string());
                if self.is_module(&child) {
                    cur = module.to_vec();
                } else {
                    return None;
                }
            }
            None => return None,
        }
        cur.extend(rest.iter().cloned());
        Some(cur)
    }

    /// The file that defines what the absolute `path` names.
    fn defining_file(&self, path: &[String], depth: usize) -> Option<Vec<String>> {
        if depth > 32 {
            return None;
        }
        let mut k = 1;
        while k < path.len() && self.is_module(&path[..=k]) {
            k += 1;
        }
        let module = &path[..k];
        if k == path.len() || path[k] == "*" {
            return self.file_of.get(module).cloned();
        }
        let item = &path[k];
        let text = &self.text[module];
        let defines = [
            "fn",
            "struct",
            "enum",
            "trait",
            "type",
            "const",
            "static",
            "union",
            "macro_rules!",
        ]
        .iter()
        .any(|kw| {
            let mut s = text.as_str();
            while let Some(i) = s.find(kw) {
                let after = s[i + kw.len()..].trim_start();
                let ident: String = after
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect();
                let before_ok = i == 0 || !s[..i].chars().last().unwrap().is_alphanumeric();
                if before_ok && &ident == item && s[i + kw.len()..].starts_with(char::is_whitespace)
                {
                    return true;
                }
                s = &s[i + kw.len()..];
            }
            false
        });
        if defines {
            return self.file_of.get(module).cloned();
        }
        // A re-export: follow it to its source.
        for (_, p) in &self.uses[module] {
            let names_it = p.last() == Some(item) || p.last().is_some_and(|l| l == "*");
            if names_it && let Some(abs) = self.absolute(module, p) {
                let target = if abs.last().is_some_and(|l| l == "*") {
                    let mut t = abs[..abs.len() - 1].to_vec();
                    t.push(item.clone());
                    t
                } else {
                    abs
                };
                if let Some(f) = self.defining_file(&target, depth + 1) {
                    return Some(f);
                }
            }
        }
        self.file_of.get(module).cloned()
    }

    /// Paths a module refers to: its use paths and inline `crate::`/`super::`/`self::` paths.
    fn references(&self, module: &[String]) -> Vec<Vec<String>> {
        let mut out: Vec<Vec<String>> = self.uses[module].iter().map(|(_, p)| p.clone()).collect();
        let text = &self.text[module];
        let chars: Vec<char> = text.chars().collect();
        let is_ident = |c: char| c.is_alphanumeric() || c == '_';
        let mut i = 0;
        while i < chars.len() {
            let at_word = i == 0 || !(is_ident(chars[i - 1]) || chars[i - 1] == ':');
            let starts = ["crate::", "super::", "self::"]
                .iter()
                .find(|s| chars[i..].starts_with(&s.chars().collect::<Vec<_>>()));
            if at_word && let Some(_) = starts {
                let mut j = i;
                while j < chars.len() && (is_ident(chars[j]) || chars[j] == ':') {
                    j += 1;
                }
                let p: String = chars[i..j].iter().collect();
                let segs: Vec<String> = p
                    .split("::")
                    .filter(|s| !s.is_empty())
                    .map(str::to_string)
                    .collect();
                out.push(segs);
                i = j;
            } else {
                i += 1;
            }
        }
        out
    }

    fn graph(&self) -> BTreeMap<Vec<String>, BTreeSet<Vec<String>>> {
        let mut g: BTreeMap<Vec<String>, BTreeSet<Vec<String>>> = BTreeMap::new();
        for f in self.files.keys() {
            g.entry(f.clone()).or_default();
        }
        for module in self.file_of.keys() {
            let from = &self.file_of[module];
            for p in self.references(module) {
                let Some(abs) = self.absolute(module, &p) else {
                    continue;
                };
                if let Some(to) = self.defining_file(&abs, 0)
                    && &to != from
                {
                    g.get_mut(from).unwrap().insert(to);
                }
            }
        }
        g
    }
}

/// Strongly connected components with more than one file.
fn cycles(g: &BTreeMap<Vec<String>, BTreeSet<Vec<String>>>) -> Vec<Vec<String>> {
    let nodes: Vec<&Vec<String>> = g.keys().collect();
    let idx: HashMap<&Vec<String>, usize> =
        nodes.iter().enumerate().map(|(i, n)| (*n, i)).collect();
    let n = nodes.len();
    let (mut index, mut low, mut on) = (vec![usize::MAX; n], vec![0; n], vec![false; n]);
    let (mut stack, mut counter, mut out) = (Vec::new(), 0, Vec::new());
    fn visit(
        v: usize,
        nodes: &[&Vec<String>],
        g: &BTreeMap<Vec<String>, BTreeSet<Vec<String>>>,
        idx: &HashMap<&Vec<String>, usize>,
        st: (
            &mut Vec<usize>,
            &mut Vec<usize>,
            &mut Vec<bool>,
            &mut Vec<usize>,
            &mut usize,
        ),
        out: &mut Vec<Vec<String>>,
    ) {
        let (index, low, on, stack, counter) = st;
        index[v] = *counter;
        low[v] = *counter;
        *counter += 1;
        stack.push(v);
        on[v] = true;
        for w in &g[nodes[v]] {
            let w = idx[w];
            if index[w] == usize::MAX {
                visit(w, nodes, g, idx, (index, low, on, stack, counter), out);
                low[v] = low[v].min(low[w]);
            } else if on[w] {
                low[v] = low[v].min(index[w]);
            }
        }
        if low[v] == index[v] {
            let mut comp = Vec::new();
            loop {
                let w = stack.pop().unwrap();
                on[w] = false;
                comp.push(nodes[w].join("::"));
                if w == v {
                    break;
                }
            }
            if comp.len() > 1 {
                comp.sort();
                out.push(comp);
            }
        }
    }
    for v in 0..n {
        if index[v] == usize::MAX {
            visit(
                v,
                &nodes,
                g,
                &idx,
                (&mut index, &mut low, &mut on, &mut stack, &mut counter),
                &mut out,
            );
        }
    }
    out
}

#[test]
fn the_checker_finds_a_planted_cycle_and_resolves_re_exports() {
    let dir = std::env::temp_dir().join(format!("heimdall-cycles-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("policy")).unwrap();
    std::fs::write(
        dir.join("lib.rs"),
        "pub mod model;\npub mod policy;\npub mod leaf;\n",
    )
    .unwrap();
    // model -> policy/costs.rs (through the re-export in policy/mod.rs), costs -> model.
    std::fs::write(
        dir.join("model.rs"),
        "use crate::policy::Costs;\npub struct ModelId;\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("policy/mod.rs"),
        "mod costs;\npub use costs::Costs;\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("policy/costs.rs"),
        "// use crate::leaf::Nothing; (a comment is no import)\npub struct Costs(crate::model::ModelId);\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("leaf.rs"),
        "pub struct Nothing;\n#[cfg(test)]\nmod tests { use super::*; }\n",
    )
    .unwrap();
    let c = Crate::load(&dir);
    let g = c.graph();
    let key = |s: &str| s.split("::").map(str::to_string).collect::<Vec<_>>();
    assert!(
        g[&key("crate::model")].contains(&key("crate::policy::costs")),
        "{g:?}"
    );
    assert!(
        !g[&key("crate::model")].contains(&key("crate::policy")),
        "{g:?}"
    );
    assert!(g[&key("crate::leaf")].is_empty(), "{g:?}");
    assert_eq!(
        cycles(&g),
        vec![vec![
            "crate::model".to_string(),
            "crate::policy::costs".to_string()
        ]]
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn no_import_cycle_between_source_files() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let c = Crate::load(&src);
    let g = c.graph();
    let found = cycles(&g);
    assert!(found.is_empty(), "import cycles between files: {found:#?}");
    // The checker sees the crate's real edges (a sanity check against resolving nothing).
    let key = |s: &str| s.split("::").map(str::to_string).collect::<Vec<_>>();
    assert!(g[&key("crate::policy::lst")].contains(&key("crate::analyzer::costs")));
    assert!(g[&key("crate::coordinator::gpu")].contains(&key("crate::coordinator")));
}
