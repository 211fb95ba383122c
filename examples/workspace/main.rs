//! `workspace`: Heimdall's "augmented interactive workspace" app (seed 000, Table 1). A
//! student's desk with printed pages: virtual document pages appear on the desk beside the text
//! the detector finds, and the user writes on them with a finger (pinch thumb and index: the
//! index tip is the pen), the ink showing as it is written.
//!
//! DNNs: text detection (PP-OCRv6 det + DB boxes, RapidOCR's pipeline) and hand tracking (palm
//! detection on demand, hand landmarks per hand), continuously, each with its own deadline.
//!
//! ```text
//! cargo run --release --example workspace                      # a window
//! cargo run --release --example workspace -- --headless --frames 300 --out out/workspace
//! ```
//! Headless runs render into an image, save every `--save-every` frame as PNG and write
//! `stats.json` (with the app's own entries: hands and text against the clip's ground truth, the
//! strokes and their capture-to-ink latency), the inked page as `page_ink.png`, and the
//! coordinator's trace.

mod pages;
mod pen;
mod scene;

use bevy::app::AppExit;
use heimdall_examples::args::AppArgs;
use heimdall_examples::{assets, harness};

/// What `--help` says the app is.
const ABOUT: &str = "The workspace AR example: virtual pages on the desk beside the detected text, written on with the pinching index fingertip; text detection and hands under heimdall's coordinator.";

fn main() -> AppExit {
    let args = AppArgs::from_env("workspace", ABOUT);
    let dir = match assets::asset_dir(args.assets.as_deref())
        .and_then(|dir| assets::require(&dir, scene::ASSETS).map(|()| dir))
    {
        Ok(d) => d,
        Err(e) => {
            eprintln!("workspace: {e}");
            return AppExit::error();
        }
    };
    let mut app = harness::build_app("workspace", &args, &dir);
    match scene::WorkspaceScene::load(&dir, args.text_side) {
        Ok(scene) => app.add_plugins(scene),
        Err(e) => {
            eprintln!("workspace: {e}");
            return AppExit::error();
        }
    };
    app.run()
}
