//! `fabric-tui`: see a fabric's utilisation and losslessness at a glance — live,
//! frozen or replayed — in a terminal (ratatui + crossterm).
//!
//! State is kept apart from drawing (STYLE.md point 16): an [`App`] is updated by
//! messages ([`app::Msg`]: keys, data, ticks, resizes); keys map to an [`Action`] through a
//! [`KeyMap`]; each panel has one `render` function in its own file under [`ui`].
//! Data sources run on their own threads and send already-aggregated [`Sample`]s, and
//! filtering and sorting the links table runs on a worker thread ([`rows`]), so nothing
//! heavy happens on the UI thread.
//!
//! # Layout
//! * [`metrics`] — per-link rates ([`LinkRates`]), a [`Sample`] of a whole fabric, totals.
//! * [`fabric`] — [`FabricView`]: names, links and the heat-map grids of each plane.
//! * [`heatmap`] — grid geometry: downsampling by maximum, half-block cells, drill-down.
//! * [`bins`] — the heat map's bins kept between frames (redraws do not bin again).
//! * [`filter`] — the `/` filter language (`util>90 and pfc>0`, `leaf-3`, `plane=2`).
//! * [`table`] — the links table: sort, filter, only the visible rows built.
//! * [`rows`] — the table's order and the filter's matches, computed on a worker thread.
//! * [`tenants`] — `--tenants FILE`: each tenant's links, for the tenant filter (`t`).
//! * [`app`] — [`App`], [`Action`], the update logic.
//! * [`keys`] — [`KeyMap`]: key → action, every binding with its help text.
//! * [`config`] — optional TOML config (theme, units, key bindings).
//! * [`theme`] — full colour, 16 colours, no colour; every colour also has a glyph.
//! * [`ui`] — layout and one render function per panel.
//! * [`driver`] — [`driver::Ui`]: an app and a terminal, drawing only when needed, ≤ 10 Hz.
//! * [`ingest`] — `fabric-api` frames → [`Sample`]s (rates of two snapshots, links folded).
//! * [`source`] — replay, daemon stream (`--connect`), recorder; [`demo`] — the simulator
//!   paced to wall-clock; [`prometheus`] — `--prometheus`; [`http`] — a small HTTP/1.1 GET.
//!
//! # Example
//! ```
//! use fabric_tui::{App, FabricView, Sample, app::Msg, Action};
//! use ratatui::{Terminal, backend::TestBackend};
//!
//! let fabric = topo::generators::fat_tree(4, topo::Rate::gbps(400)).unwrap();
//! let view = FabricView::from_topo(&fabric);
//! let mut app = App::new(view, Default::default());
//! let mut sample = Sample::idle(&app.fabric, 1_000_000_000);
//! sample.links[3].drops_per_s = 10.0;
//! sample.finish(&app.fabric);
//! app.update(Msg::Sample(sample));
//! assert!(!app.current().unwrap().totals.lossless());
//! app.update(Msg::Action(Action::Freeze));
//! assert!(app.frozen);
//!
//! let mut term = Terminal::new(TestBackend::new(100, 30)).unwrap();
//! term.draw(|f| fabric_tui::ui::render(f, &app)).unwrap();
//! ```

pub mod app;
pub mod bins;
pub mod config;
pub mod demo;
pub mod driver;
pub mod error;
pub mod fabric;
pub mod filter;
pub mod heatmap;
pub mod http;
pub mod ingest;
pub mod keys;
pub mod metrics;
pub mod prometheus;
pub mod rows;
pub mod source;
pub mod table;
pub mod tenants;
pub mod theme;
pub mod ui;
pub mod units;

pub use app::{Action, App};
pub use error::{Error, Result};
pub use fabric::FabricView;
pub use keys::KeyMap;
pub use metrics::{LinkRates, Sample};
