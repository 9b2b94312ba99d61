//! `fabric-tui`: see a fabric's utilisation and losslessness at a glance.
//!
//! ```text
//! fabric-tui                                  # demo: simulated all-reduce + incast + a link failure
//! fabric-tui --demo --preset deepseek-mpft [--scenario FILE]
//! fabric-tui --replay run.rec [--speed 4]     # a recording (fabric sim --record, --record)
//! fabric-tui --connect 10.0.0.1:9100          # the daemon's stream (fabric serve)
//! fabric-tui --connect HOST:PORT --record live.rec
//! fabric-tui --prometheus http://prometheus:9090 [--interval 2]
//! fabric-tui --prometheus http://prometheus:9090 --fabric fat-tree-k4   # switches' node_exporter
//! ```
//! Keys: `?` lists them all. Config: `--config FILE` (TOML: theme, units, keys).

use anyhow::{Context, Result, bail};
use clap::Parser;
use crossterm::event::{self, Event, KeyEventKind};
use crossterm::{execute, terminal};
use fabric_tui::app::{Msg, Options, SourceStatus};
use fabric_tui::config::Config;
use fabric_tui::demo::{self, Demo, DemoConfig};
use fabric_tui::driver::Ui;
use fabric_tui::source::{self, Control, Recorder, Replay};
use fabric_tui::theme::Theme;
use fabric_tui::units::Units;
use fabric_tui::{Action, App, FabricView, prometheus};
use ratatui::Terminal;
use ratatui::backend::CrosstermBackend;
use std::path::PathBuf;
use std::sync::mpsc;
use std::time::{Duration, Instant};

#[derive(Parser, Debug)]
#[command(
    name = "fabric-tui",
    version,
    about = "Link utilisation and losslessness of a fabric, live, frozen or replayed"
)]
struct Args {
    /// Run the embedded simulation (the default when no other source is given).
    #[arg(long, conflicts_with_all = ["replay", "connect", "prometheus"])]
    demo: bool,
    /// Demo fabric: a topo preset (`fabric topo presets`), e.g. fat-tree-k8, deepseek-mpft.
    #[arg(long, default_value = "fat-tree-k8")]
    preset: String,
    /// Demo workload: a scenario file instead of the built-in all-reduce + incast.
    #[arg(long, value_name = "FILE")]
    scenario: Option<PathBuf>,
    /// Play a recording (from `fabric sim --record` or `fabric-tui --record`).
    #[arg(long, value_name = "FILE", conflicts_with = "connect")]
    replay: Option<PathBuf>,
    /// Replay speed, relative to the recording's cadence: 1 (the default) plays a
    /// wall-clock recording in real time and a simulated one at one snapshot per 100 ms
    /// frame; 4 plays either four times faster.
    #[arg(long, requires = "replay")]
    speed: Option<f64>,
    /// Follow a daemon's telemetry stream (`fabric serve`), HOST:PORT.
    #[arg(long, value_name = "HOST:PORT")]
    connect: Option<String>,
    /// Ask a Prometheus server that scrapes `fabric serve` daemons (http://HOST:PORT).
    #[arg(long, value_name = "URL", conflicts_with_all = ["replay", "connect"])]
    prometheus: Option<String>,
    /// With --prometheus: the design (a spec file or preset) whose switches' own
    /// node_exporter series to read (labels `switch` and `device`, docs/observe.md),
    /// instead of `fabric serve` daemons' series. With --tenants and --connect or
    /// --replay: the design the tenant file is checked against.
    #[arg(long, value_name = "DESIGN")]
    fabric: Option<String>,
    /// Tenant file (docs/tenants.md): `t` restricts the links table, the heat map, the
    /// header and its sparklines to one tenant's host links. Checked against the demo's
    /// preset, or --fabric.
    #[arg(long, value_name = "FILE")]
    tenants: Option<PathBuf>,
    /// Seconds between two Prometheus queries.
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u64).range(1..=3600), requires = "prometheus")]
    interval: u64,
    /// Also write what a live source sends into a recording (the daemon stream or the demo).
    #[arg(long, value_name = "FILE", conflicts_with_all = ["replay", "prometheus"])]
    record: Option<PathBuf>,
    /// TOML config: theme, units, key bindings.
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// Colour theme (overrides the config; NO_COLOR in the environment means `none`).
    #[arg(long, value_enum)]
    theme: Option<ThemeArg>,
    /// Show rates in bits or bytes per second.
    #[arg(long, value_enum)]
    units: Option<UnitsArg>,
}

#[derive(clap::ValueEnum, Clone, Copy, Debug)]
enum ThemeArg {
    Full,
    Ansi16,
    None,
}

#[derive(clap::ValueEnum, Clone, Copy, Debug)]
enum UnitsArg {
    Bits,
    Bytes,
}

fn options(a: &Args) -> Result<Options> {
    let cfg = match &a.config {
        Some(p) => Config::load(p)?,
        None => Config::default(),
    };
    let keys = cfg.keymap(
        &a.config
            .as_ref()
            .map_or(String::new(), |p| p.display().to_string()),
    )?;
    let mut theme = cfg.theme.unwrap_or_default();
    if std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty()) {
        theme = Theme::None;
    }
    if let Some(t) = a.theme {
        theme = match t {
            ThemeArg::Full => Theme::Full,
            ThemeArg::Ansi16 => Theme::Ansi16,
            ThemeArg::None => Theme::None,
        };
    }
    let units = match a.units {
        Some(UnitsArg::Bits) => Units::Bits,
        Some(UnitsArg::Bytes) => Units::Bytes,
        None => cfg.units.unwrap_or_default(),
    };
    Ok(Options { theme, units, keys })
}

fn main() -> Result<()> {
    let mut a = Args::parse();
    let opts = options(&a)?;
    if let Some(x) = a
        .speed
        .filter(|x| !(x.is_finite() && *x >= source::MIN_SPEED && *x <= source::MAX_SPEED))
    {
        bail!("--speed {x}: expected a number from 0.000001 to 1024");
    }
    if let Some(addr) = &a.connect {
        a.connect = Some(source::check_address(addr).map_err(anyhow::Error::msg)?);
    }
    if a.fabric.is_some() && a.prometheus.is_none() && a.tenants.is_none() {
        bail!("--fabric: only with --prometheus or --tenants");
    }
    // before the screen opens: a path that cannot be written is an error here
    let rec = a.record.as_deref().map(Recorder::create).transpose()?;
    let rec_name = rec.as_ref().map(Recorder::name);
    let (tx, rx) = mpsc::channel::<Msg>();
    let (ctl_tx, ctl_rx) = mpsc::channel::<Control>();
    let mut design: Option<topo::Fabric> = None;
    let (view, worker): (FabricView, Box<dyn FnOnce() + Send>) = if let Some(path) = &a.replay {
        let r = Replay::open(path)?;
        let speed = a.speed.unwrap_or(1.0);
        let tx = tx.clone();
        (r.view().clone(), Box::new(move || r.run(speed, tx, ctl_rx)))
    } else if let Some(addr) = a.connect.clone() {
        let tx2 = tx.clone();
        let _ = tx.send(Msg::Status(SourceStatus::Connecting(format!(
            "fabric serve {addr}"
        ))));
        let empty = FabricView::new(
            String::from("(waiting for the fabric map)"),
            Vec::new(),
            Vec::new(),
        );
        (
            empty,
            Box::new(move || source::connect(addr, tx2, ctl_rx, rec)),
        )
    } else if let Some(url) = &a.prometheus {
        let server = prometheus::Server::parse(url).map_err(anyhow::Error::msg)?;
        let every = Duration::from_secs(a.interval);
        let tx2 = tx.clone();
        let _ = tx.send(Msg::Status(SourceStatus::Connecting(format!(
            "prometheus {}",
            server.addr
        ))));
        if let Some(design) = &a.fabric {
            let f = prometheus::load_design(design).map_err(anyhow::Error::msg)?;
            let view = FabricView::from_topo(&f);
            (
                view,
                Box::new(move || prometheus::run_nodes(server, f, every, tx2, ctl_rx)),
            )
        } else {
            let empty = FabricView::new(
                String::from("(waiting for fabric_link_info)"),
                Vec::new(),
                Vec::new(),
            );
            (
                empty,
                Box::new(move || prometheus::run(server, every, tx2, ctl_rx)),
            )
        }
    } else {
        let cfg = DemoConfig {
            preset: a.preset.clone(),
            scenario: a.scenario.clone(),
            ..DemoConfig::default()
        };
        let d = Demo::new(&cfg)?;
        design = Some(d.fabric().clone());
        let view = FabricView::from_info(&d.info()).0;
        let tx2 = tx.clone();
        (view, Box::new(move || demo::run(d, &cfg, tx2, ctl_rx, rec)))
    };
    let (done_tx, done_rx) = mpsc::channel::<()>();
    std::thread::spawn(move || {
        worker();
        let _ = done_tx.send(());
    });
    let mut app = App::new(view, opts);
    if let Some(path) = &a.tenants {
        let f = match (design, &a.fabric) {
            (Some(f), _) => f,
            (None, Some(d)) => prometheus::load_design(d).map_err(anyhow::Error::msg)?,
            (None, None) => bail!(
                "--tenants {}: needs the design its hosts are in: --fabric DESIGN (or the demo)",
                path.display()
            ),
        };
        app.set_tenants(fabric_tui::tenants::TenantSpec::load(path, &f)?);
    }
    app.recording = rec_name;
    app.set_worker(fabric_tui::rows::Worker::spawn(tx.clone()));
    let res = run_terminal(app, tx, rx, &ctl_tx);
    let _ = ctl_tx.send(Control::Stop);
    // let a recorder write its index (bounded wait: a blocked read may not notice at once)
    let _ = done_rx.recv_timeout(Duration::from_secs(2));
    res
}

/// The terminal's output: one buffer per frame (ratatui flushes after each draw), not a
/// write per 1 KiB as `Stdout`'s own line buffer does.
type Out = std::io::BufWriter<std::io::Stdout>;

fn setup() -> Result<Terminal<CrosstermBackend<Out>>> {
    let prev = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        restore();
        prev(info);
    }));
    terminal::enable_raw_mode().context("raw mode (is this a terminal?)")?;
    execute!(
        std::io::stdout(),
        terminal::EnterAlternateScreen,
        event::EnableMouseCapture,
        crossterm::cursor::Hide
    )?;
    let out = std::io::BufWriter::with_capacity(1 << 16, std::io::stdout());
    Ok(Terminal::new(CrosstermBackend::new(out))?)
}

/// Put the terminal back as it was (also from the panic hook).
fn restore() {
    let _ = terminal::disable_raw_mode();
    let _ = execute!(
        std::io::stdout(),
        event::DisableMouseCapture,
        terminal::LeaveAlternateScreen,
        crossterm::cursor::Show
    );
}

/// SIGTERM, SIGHUP and SIGINT end the program as `q` does (terminal restored, recording
/// finished); SIGTSTP suspends it as Ctrl-Z does.
fn watch_signals(tx: mpsc::Sender<Msg>) -> Result<()> {
    use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM, SIGTSTP};
    let mut signals = signal_hook::iterator::Signals::new([SIGTERM, SIGHUP, SIGINT, SIGTSTP])
        .context("installing the signal handlers")?;
    std::thread::spawn(move || {
        for sig in signals.forever() {
            let a = if sig == SIGTSTP {
                Action::Suspend
            } else {
                Action::Quit
            };
            if tx.send(Msg::Action(a)).is_err() {
                return;
            }
        }
    });
    Ok(())
}

/// Hand the terminal back to the shell and stop (as SIGTSTP's default action does); on
/// `fg` take it again and redraw everything.
fn suspend(ui: &mut Ui<CrosstermBackend<Out>>) -> Result<()> {
    restore();
    signal_hook::low_level::emulate_default_handler(signal_hook::consts::SIGTSTP)
        .context("suspending")?;
    // resumed (SIGCONT)
    terminal::enable_raw_mode().context("raw mode after resuming")?;
    execute!(
        std::io::stdout(),
        terminal::EnterAlternateScreen,
        event::EnableMouseCapture,
        terminal::Clear(terminal::ClearType::All),
        crossterm::cursor::Hide
    )?;
    // both buffers empty: the next draw writes every cell (not `Terminal::clear`, which
    // asks the terminal for the cursor position while the input thread reads the replies)
    ui.term.swap_buffers();
    if let Ok(s) = ui.term.size() {
        ui.handle(Msg::Resize(s.width, s.height));
    }
    Ok(())
}

fn run_terminal(
    app: App,
    tx: mpsc::Sender<Msg>,
    rx: mpsc::Receiver<Msg>,
    ctl: &mpsc::Sender<Control>,
) -> Result<()> {
    watch_signals(tx.clone())?;
    let term = setup()?;
    std::thread::spawn(move || {
        loop {
            let m = match event::read() {
                Ok(Event::Key(k)) if k.kind != KeyEventKind::Release => Msg::Key(k),
                Ok(Event::Resize(w, h)) => Msg::Resize(w, h),
                // clicks and the wheel (not every move or drag of the pointer)
                Ok(Event::Mouse(m))
                    if matches!(
                        m.kind,
                        event::MouseEventKind::Down(_)
                            | event::MouseEventKind::ScrollUp
                            | event::MouseEventKind::ScrollDown
                    ) =>
                {
                    Msg::Mouse(m)
                }
                Ok(_) => continue,
                Err(_) => return,
            };
            if tx.send(m).is_err() {
                return;
            }
        }
    });
    let mut ui = Ui::new(app, term);
    let res = event_loop(&mut ui, &rx, ctl);
    restore();
    res
}

fn event_loop(
    ui: &mut Ui<CrosstermBackend<Out>>,
    rx: &mpsc::Receiver<Msg>,
    ctl: &mpsc::Sender<Control>,
) -> Result<()> {
    loop {
        let now = Instant::now();
        let wait = ui
            .next_draw(now)
            .map_or(Duration::from_secs(1), |t| t.saturating_duration_since(now));
        match rx.recv_timeout(wait) {
            Ok(m) => {
                ui.handle(m);
                while let Ok(m) = rx.try_recv() {
                    ui.handle(m);
                }
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            Err(mpsc::RecvTimeoutError::Disconnected) => return Ok(()),
        }
        for r in ui.app.requests.drain(..) {
            let _ = ctl.send(Control::Ui(r));
        }
        if ui.app.quit {
            return Ok(());
        }
        if std::mem::take(&mut ui.app.suspend) {
            suspend(ui)?;
        }
        ui.draw_due(Instant::now())?;
    }
}
