//! [`App`]: everything the screen shows, updated only by [`Msg`]s; drawing reads it.
//!
//! Keys become [`Action`]s through the [`KeyMap`]; data arrives already aggregated
//! ([`Sample`]s from a source thread). While frozen, new samples are kept aside and the
//! app asks for no redraw; unfreezing shows the latest. The links table's order and the
//! filter's matches come from a worker thread ([`crate::rows`]).

use crate::bins::{self, Bins, GridId, Panel};
use crate::fabric::{FabricView, Grid};
use crate::filter::Expr;
use crate::heatmap::{self, Level, Window};
use crate::keys::KeyMap;
use crate::metrics::{EventRow, History, LinkRates, Sample, Totals};
use crate::rows::{Job, Key, Query, Rows, Worker};
use crate::table::{FlowSort, SortKey};
use crate::tenants::{TenantMask, TenantSpec, TenantTotals, TenantView};
use crate::theme::Theme;
use crate::units::Units;
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers, MouseButton, MouseEvent, MouseEventKind};
use std::borrow::Cow;
use std::collections::VecDeque;
use std::sync::Arc;

pub use crate::keys::Action;

/// Samples of history kept for the charts.
pub const HISTORY: usize = 600;

/// Most events kept.
pub const MAX_EVENTS: usize = 10_000;

/// The views, in Tab order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Tab {
    /// Heat map of link utilisation per plane.
    #[default]
    Heatmap,
    /// Links table.
    Links,
    /// Flows and congestion control.
    Flows,
    /// Events.
    Events,
}

impl Tab {
    /// All tabs in order.
    pub const ALL: [Tab; 4] = [Tab::Heatmap, Tab::Links, Tab::Flows, Tab::Events];
    /// Tab title.
    pub fn name(self) -> &'static str {
        match self {
            Tab::Heatmap => "Heat map",
            Tab::Links => "Links",
            Tab::Flows => "Flows",
            Tab::Events => "Events",
        }
    }
}

/// Where the data comes from and whether it is flowing.
#[derive(Debug, Clone, PartialEq)]
pub enum SourceStatus {
    /// Waiting for the first data.
    Connecting(String),
    /// Live data (demo simulation, daemon stream, Prometheus).
    Live(String),
    /// Replaying a recording.
    Replay {
        /// File name.
        name: String,
        /// Playback speed relative to the recording's cadence (1: as recorded; for a
        /// simulated recording, one snapshot per 100 ms frame).
        speed: f64,
        /// Playback is paused (Space), the position held.
        paused: bool,
        /// How far one seek moves, ns (a twentieth of the recording).
        step_ns: u64,
        /// Position, ns from the recording's start.
        at_ns: u64,
        /// Length of the recording, ns.
        len_ns: u64,
        /// Played to the end.
        ended: bool,
    },
    /// The source went away; values shown are stale.
    Disconnected {
        /// Source name.
        name: String,
        /// Wall-clock time it was lost, as the source formats it (`17:32:10`).
        since: String,
        /// Why.
        reason: String,
    },
}

/// A request from the UI to the source (replay: pause, seeks and speed).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Request {
    /// Move by this many seek steps (negative: back); a step is a twentieth of the
    /// recording.
    Seek(i32),
    /// Multiply the playback speed.
    Speed(f64),
    /// Pause playback, or resume it where it stopped.
    TogglePause,
}

/// A message to the app.
#[derive(Debug, Clone, PartialEq)]
pub enum Msg {
    /// A key press.
    Key(KeyEvent),
    /// A mouse click or wheel turn.
    Mouse(MouseEvent),
    /// An action (from a key or a test).
    Action(Action),
    /// A new fabric shape (the source's port map).
    Fabric(Box<FabricView>),
    /// New rates.
    Sample(Sample),
    /// An event.
    Event(EventRow),
    /// The source's state changed.
    Status(SourceStatus),
    /// The terminal was resized.
    Resize(u16, u16),
    /// The links table's rows for a sample and query (from the rows worker).
    Rows(Arc<Rows>),
    /// A recording started (its file name) or stopped (`None`).
    Recording(Option<String>),
}

/// Start-up options.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// Colours.
    pub theme: Theme,
    /// Rate units.
    pub units: Units,
    /// Key bindings.
    pub keys: KeyMap,
}

/// The filter being typed.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct FilterState {
    /// The text as typed.
    pub text: String,
    /// Being edited now.
    pub editing: bool,
    /// The parsed filter in force.
    pub expr: Option<Expr>,
    /// Why `text` does not parse.
    pub error: Option<String>,
}

/// The whole UI state.
#[derive(Debug)]
pub struct App {
    /// The fabric's shape (shared with the rows worker).
    pub fabric: Arc<FabricView>,
    /// Colours.
    pub theme: Theme,
    /// Bits or bytes.
    pub units: Units,
    /// Key bindings.
    pub keys: KeyMap,
    /// Current view.
    pub tab: Tab,
    /// Help screen shown.
    pub help: bool,
    /// First help line shown (the help scrolls).
    pub help_scroll: usize,
    /// Display frozen.
    pub frozen: bool,
    /// Quit requested.
    pub quit: bool,
    /// The recording being written (`--record`), by file name.
    pub recording: Option<String>,
    /// Suspend requested (the terminal's owner stops the process and clears this).
    pub suspend: bool,
    /// Source state.
    pub status: SourceStatus,
    /// Totals over time (for sparklines and charts).
    pub history: History,
    /// Events, oldest first.
    pub events: VecDeque<EventRow>,
    /// Links-table and heat-map filter.
    pub filter: FilterState,
    /// Sort column.
    pub sort: SortKey,
    /// Ascending sort.
    pub ascending: bool,
    /// Only faulty links.
    pub faults_only: bool,
    /// The flows view's sort column.
    pub flow_sort: FlowSort,
    /// The flows view sorts smallest first.
    pub flow_ascending: bool,
    /// Selected row of the links / flows / events / cell list.
    pub selected: usize,
    /// The link selected in the links table: the cursor stays on it when rows re-sort
    /// (None: the top row, nothing chosen yet).
    pub selected_link: Option<u32>,
    /// The link opened from the links table (Enter), shown in that view; Esc closes it.
    pub link_open: Option<u32>,
    /// Plane shown in the heat map.
    pub plane: usize,
    /// All planes side by side.
    pub side_by_side: bool,
    /// Drill-down path below the plane's top grid.
    pub path: Vec<Level>,
    /// Heat-map cursor (bin row, bin column).
    pub cursor: (u32, u32),
    /// Charts use a fixed 0–100 % scale.
    pub y_fixed: bool,
    /// Terminal size.
    pub size: (u16, u16),
    /// Requests for the source, drained by the main loop.
    pub requests: Vec<Request>,
    /// History of the link being looked at (drill-down to one link).
    pub link_history: VecDeque<LinkRates>,
    /// The tenant file's entries (`--tenants`), kept to map every fabric the source sends.
    pub tenant_spec: Option<TenantSpec>,
    /// Each tenant's links in the fabric on screen.
    pub tenants: Arc<TenantView>,
    /// The tenant the views are restricted to (`t`), if any.
    pub tenant: Option<usize>,
    /// Each tenant's totals and history, kept as samples are shown.
    tenant_totals: Vec<TenantTotals>,
    shown: Option<Arc<Sample>>,
    prev: Option<Arc<Sample>>,
    /// The latest sample received while frozen.
    pending: Option<Sample>,
    dirty: bool,
    /// Serial number of the shown sample, and of the last one received.
    serial: u64,
    last_serial: u64,
    /// The query in force and its generation (+1 per change).
    query: Query,
    query_gen: u64,
    /// A sample received, waiting for its rows before it is shown.
    awaiting: Option<(u64, Arc<Sample>)>,
    /// The newest sample received meanwhile (shown after `awaiting`).
    queued: Option<(u64, Arc<Sample>)>,
    /// Rows asked for and not yet received.
    requested: Option<Key>,
    /// The latest rows received.
    rows: Option<Arc<Rows>>,
    /// The table order the links cursor was last placed in (sample serial, rows key).
    followed: (u64, Option<Key>),
    worker: Option<Worker>,
    /// The heat map's bins, kept between frames ([`App::prepare`]).
    bins: Bins,
}

impl App {
    /// A new app for `fabric`.
    pub fn new(fabric: FabricView, o: Options) -> App {
        App {
            fabric: Arc::new(fabric),
            theme: o.theme,
            units: o.units,
            keys: o.keys,
            tab: Tab::Heatmap,
            help: false,
            help_scroll: 0,
            frozen: false,
            quit: false,
            suspend: false,
            recording: None,
            status: SourceStatus::Connecting(String::new()),
            history: History::new(HISTORY),
            events: VecDeque::new(),
            filter: FilterState::default(),
            sort: SortKey::Util,
            ascending: false,
            faults_only: false,
            flow_sort: FlowSort::Rate,
            flow_ascending: false,
            selected: 0,
            selected_link: None,
            link_open: None,
            plane: 0,
            side_by_side: false,
            path: Vec::new(),
            cursor: (0, 0),
            y_fixed: true,
            size: (80, 24),
            requests: Vec::new(),
            link_history: VecDeque::new(),
            tenant_spec: None,
            tenants: Arc::new(TenantView::default()),
            tenant: None,
            tenant_totals: Vec::new(),
            shown: None,
            prev: None,
            pending: None,
            dirty: true,
            serial: 0,
            last_serial: 0,
            query: Query::default(),
            query_gen: 0,
            awaiting: None,
            queued: None,
            requested: None,
            rows: None,
            followed: (0, None),
            worker: None,
            bins: Bins::default(),
        }
    }

    /// Compute the links table's rows on `worker`'s thread from now on (without one they
    /// are computed in line, as tests and benchmarks want).
    pub fn set_worker(&mut self, worker: Worker) {
        self.worker = Some(worker);
    }

    /// Restrict views to tenants from now on (`t` cycles through them).
    pub fn set_tenants(&mut self, spec: TenantSpec) {
        self.tenants = Arc::new(spec.view(&self.fabric));
        self.tenant_spec = Some(spec);
        self.tenant_totals.clear();
        if let Some(s) = &self.shown {
            crate::tenants::update(
                &self.tenants,
                &self.fabric,
                s,
                &mut self.tenant_totals,
                HISTORY,
            );
        }
        self.dirty = true;
    }

    /// The name of the tenant the views are restricted to.
    pub fn tenant_name(&self) -> Option<&str> {
        self.tenant
            .and_then(|i| self.tenants.names.get(i))
            .map(String::as_str)
    }

    /// The totals the header shows: the tenant's links' when a tenant is chosen (once a
    /// sample was shown with it), else the fabric's.
    pub fn view_totals(&self) -> Option<&Totals> {
        let cur = self.current()?;
        Some(match self.tenant {
            Some(i) => self.tenant_totals.get(i).map_or(&cur.totals, |t| &t.totals),
            None => &cur.totals,
        })
    }

    /// The history the header's sparklines draw: the chosen tenant's, else the fabric's.
    pub fn view_history(&self) -> &History {
        self.tenant
            .and_then(|i| self.tenant_totals.get(i))
            .map_or(&self.history, |t| &t.history)
    }

    /// The sample on screen.
    pub fn current(&self) -> Option<&Sample> {
        self.shown.as_deref()
    }

    /// The sample before it (for change markers).
    pub fn previous(&self) -> Option<&Sample> {
        self.prev.as_deref()
    }

    /// Rates on screen (empty before the first sample).
    pub fn rates(&self) -> &[LinkRates] {
        self.shown.as_ref().map_or(&[], |s| &s.links)
    }

    /// Does the screen need drawing? Clears the flag.
    pub fn take_dirty(&mut self) -> bool {
        std::mem::take(&mut self.dirty)
    }

    /// Apply one message.
    pub fn update(&mut self, msg: Msg) {
        self.apply(msg);
        self.want_rows();
        self.follow_link();
    }

    /// Keep the links table's cursor on the selected link when the table's order
    /// changed (a new sample re-sorted it, another sort or filter arrived); a link that
    /// left the table leaves the cursor on its row, now another link's.
    fn follow_link(&mut self) {
        let now = (self.serial, self.rows.as_ref().map(|r| r.key));
        if now == self.followed {
            return;
        }
        self.followed = now;
        let Some(link) = self.selected_link else {
            return;
        };
        let ids = self.table_ids();
        let at = ids.iter().position(|&id| id == link);
        let row = self.selected.min(ids.len().saturating_sub(1));
        match at {
            Some(i) => self.selected = i,
            None => self.selected_link = ids.get(row).copied(),
        }
        self.dirty = true;
    }

    /// The user moved the links table's cursor: it now follows the link on that row.
    fn choose_row(&mut self) {
        if self.tab == Tab::Links && self.link_open.is_none() {
            let ids = self.table_ids();
            let row = self.selected.min(ids.len().saturating_sub(1));
            let link = ids.get(row).copied();
            (self.selected, self.selected_link) = (row, link);
        }
    }

    fn apply(&mut self, msg: Msg) {
        match msg {
            Msg::Key(k) => self.key(k),
            Msg::Mouse(m) => self.mouse(m),
            Msg::Action(a) => self.act(a),
            Msg::Fabric(f) => {
                // another fabric, or the same one from a restarted daemon: start afresh
                self.fabric = Arc::new(*f);
                self.history = History::new(HISTORY);
                self.link_history.clear();
                self.selected = 0;
                self.selected_link = None;
                self.link_open = None;
                self.path.clear();
                self.plane = 0;
                self.cursor = (0, 0);
                self.shown = None;
                self.prev = None;
                self.pending = None;
                self.awaiting = None;
                self.queued = None;
                self.requested = None;
                self.rows = None;
                self.query_gen += 1;
                if let Some(spec) = &self.tenant_spec {
                    self.tenants = Arc::new(spec.view(&self.fabric));
                }
                self.tenant_totals.clear();
                self.dirty = true;
            }
            Msg::Rows(r) => self.take_rows(r),
            Msg::Sample(s) => self.sample(s),
            Msg::Event(e) => {
                if self.events.len() == MAX_EVENTS {
                    self.events.pop_front();
                }
                self.events.push_back(e);
                self.dirty |= !self.frozen && self.tab == Tab::Events;
            }
            Msg::Status(s) => {
                self.dirty |= s != self.status;
                self.status = s;
            }
            Msg::Resize(w, h) => {
                self.size = (w, h);
                self.dirty = true;
            }
            Msg::Recording(r) => {
                self.recording = r;
                self.dirty = true;
            }
        }
    }

    fn sample(&mut self, s: Sample) {
        if s.links.len() != self.fabric.links.len() {
            return; // from another fabric (a source switching fabrics sends Fabric first)
        }
        if self.frozen {
            self.pending = Some(s);
            return;
        }
        self.receive(s);
    }

    /// A sample to show: at once when it needs no rows, else once they arrive.
    fn receive(&mut self, s: Sample) {
        self.last_serial += 1;
        let s = (self.last_serial, Arc::new(s));
        if self.awaiting.is_some() {
            self.queued = Some(s); // after the one waiting: each answer shows a sample
        } else {
            self.awaiting = Some(s);
        }
    }

    /// Does this sample need a job for the query in force?
    fn needs_rows(&self, s: &Sample) -> bool {
        !self.query.is_default() || s.by_util.len() != s.links.len()
    }

    /// After every message: note a query change, show a sample that needs no rows, and
    /// ask for the rows the screen needs if they are neither here nor asked for.
    fn want_rows(&mut self) {
        let q = Query {
            filter: self.filter.expr.clone(),
            faults_only: self.faults_only,
            sort: self.sort,
            ascending: self.ascending,
            tenant: self.tenant.and_then(|index| {
                let mask = self.tenants.masks.get(index)?.clone();
                Some(TenantMask { index, mask })
            }),
        };
        if q != self.query {
            self.query = q;
            self.query_gen += 1;
            self.dirty = true;
        }
        while let Some((serial, s)) = self.awaiting.take() {
            if self.needs_rows(&s) {
                self.awaiting = Some((serial, s));
                break;
            }
            self.show(serial, s);
            self.awaiting = self.queued.take();
        }
        let target = match (&self.awaiting, &self.shown) {
            (Some((serial, s)), _) => (*serial, s.clone()),
            (None, Some(s)) if self.needs_rows(s) => (self.serial, s.clone()),
            _ => return,
        };
        let key = Key {
            sample: target.0,
            query: self.query_gen,
        };
        if self.rows.as_ref().is_some_and(|r| r.key == key) || self.requested == Some(key) {
            return;
        }
        self.requested = Some(key);
        let job = Job {
            key,
            fabric: self.fabric.clone(),
            sample: target.1,
            query: self.query.clone(),
        };
        match &self.worker {
            Some(w) => w.send(job),
            None => {
                let rows = Arc::new(job.run());
                self.take_rows(rows);
                self.want_rows(); // a queued sample may be next
            }
        }
    }

    /// Rows arrived: show the sample they were computed for, or keep them for the one on
    /// screen; stale rows (another sample, an older query) are dropped.
    fn take_rows(&mut self, r: Arc<Rows>) {
        if r.key.query != self.query_gen {
            return;
        }
        if self.requested == Some(r.key) {
            self.requested = None;
        }
        match &self.awaiting {
            Some((serial, _)) if *serial == r.key.sample => {
                let (serial, s) = self.awaiting.take().expect("matched above");
                self.show(serial, s);
                self.awaiting = self.queued.take();
            }
            _ if self.shown.is_some() && r.key.sample == self.serial => {}
            _ => return,
        }
        self.rows = Some(r);
        self.dirty = true;
    }

    fn show(&mut self, serial: u64, s: Arc<Sample>) {
        self.serial = serial;
        self.history.push(&s);
        crate::tenants::update(
            &self.tenants,
            &self.fabric,
            &s,
            &mut self.tenant_totals,
            HISTORY,
        );
        if let Some(l) = self.watched_link() {
            if self.link_history.len() == 300 {
                self.link_history.pop_front();
            }
            self.link_history.push_back(s.links[l as usize]);
        }
        self.prev = self.shown.replace(s);
        self.dirty = true;
    }

    fn key(&mut self, k: KeyEvent) {
        if self.filter.editing {
            self.edit_filter(k);
            return;
        }
        if let Some(a) = self.keys.action(&k) {
            self.act(a);
        }
    }

    /// A click on a tab opens it, on a row selects it, on a column header sorts by
    /// that column (again: the other way); the wheel moves three rows (or scrolls help).
    fn mouse(&mut self, m: MouseEvent) {
        use crate::ui::Hit;
        match m.kind {
            MouseEventKind::ScrollDown | MouseEventKind::ScrollUp => {
                let a = if m.kind == MouseEventKind::ScrollDown {
                    Action::Down
                } else {
                    Action::Up
                };
                for _ in 0..3 {
                    self.act(a);
                }
            }
            MouseEventKind::Down(MouseButton::Left) if !self.help && !self.filter.editing => {
                match crate::ui::hit(self, m.column, m.row) {
                    Some(Hit::Tab(t)) => self.show_tab(t),
                    Some(Hit::LinkRow(i)) => {
                        self.selected = i;
                        self.choose_row();
                    }
                    Some(Hit::LinkSort(k)) => {
                        self.ascending = self.sort == k && !self.ascending;
                        self.sort = k;
                    }
                    Some(Hit::FlowRow(i)) => self.selected = i,
                    Some(Hit::FlowSort(k)) => {
                        self.flow_ascending = self.flow_sort == k && !self.flow_ascending;
                        self.flow_sort = k;
                    }
                    None => {}
                }
                self.dirty = true;
            }
            _ => {}
        }
    }

    fn edit_filter(&mut self, k: KeyEvent) {
        let f = &mut self.filter;
        match k.code {
            KeyCode::Enter => {
                f.editing = false;
                self.apply_filter();
            }
            KeyCode::Esc => {
                f.editing = false;
                f.text.clear();
                self.apply_filter();
            }
            KeyCode::Backspace => {
                f.text.pop();
            }
            KeyCode::Char('c') if k.modifiers.contains(KeyModifiers::CONTROL) => self.quit = true,
            KeyCode::Char('z') if k.modifiers.contains(KeyModifiers::CONTROL) => {
                self.suspend = true
            }
            KeyCode::Char('u') if k.modifiers.contains(KeyModifiers::CONTROL) => f.text.clear(),
            KeyCode::Char(c) if f.text.len() < crate::filter::MAX_LEN => f.text.push(c),
            _ => {}
        }
        self.dirty = true;
    }

    fn apply_filter(&mut self) {
        let f = &mut self.filter;
        (f.expr, f.error) = if f.text.trim().is_empty() {
            (None, None)
        } else {
            match f.text.parse::<Expr>() {
                Ok(e) => (Some(e), None),
                Err(e) => (None, Some(e.to_string())),
            }
        };
        self.selected = 0;
    }

    /// Apply one action.
    pub fn act(&mut self, a: Action) {
        self.dirty = true;
        if self.help {
            let page = self.page();
            let s = &mut self.help_scroll;
            match a {
                Action::Help | Action::Back => self.help = false,
                Action::Up => *s = s.saturating_sub(1),
                Action::Down => *s = s.saturating_add(1),
                Action::PageUp => *s = s.saturating_sub(page),
                Action::PageDown => *s = s.saturating_add(page),
                Action::Home => *s = 0,
                Action::End => *s = usize::MAX,
                Action::Quit => self.quit = true,
                Action::Suspend => self.suspend = true,
                _ => {}
            }
            self.help_scroll = self.help_scroll.min(crate::ui::help_max_scroll(self));
            return;
        }
        match a {
            Action::Quit => self.quit = true,
            Action::Suspend => self.suspend = true,
            Action::Help => (self.help, self.help_scroll) = (true, 0),
            Action::ViewHeat => self.show_tab(Tab::Heatmap),
            Action::ViewLinks => self.show_tab(Tab::Links),
            Action::ViewFlows => self.show_tab(Tab::Flows),
            Action::ViewEvents => self.show_tab(Tab::Events),
            Action::NextView | Action::PrevView => {
                let i = Tab::ALL.iter().position(|t| *t == self.tab).unwrap_or(0);
                let d = if a == Action::NextView {
                    1
                } else {
                    Tab::ALL.len() - 1
                };
                self.show_tab(Tab::ALL[(i + d) % Tab::ALL.len()]);
            }
            Action::Up | Action::Down | Action::Left | Action::Right => {
                self.arrow(a);
                self.choose_row();
            }
            Action::PageUp => {
                self.selected = self.selected.saturating_sub(self.page());
                self.choose_row();
            }
            Action::PageDown => {
                self.selected = self.selected.saturating_add(self.page());
                self.choose_row();
            }
            Action::Home => {
                self.selected = 0;
                self.choose_row();
            }
            Action::End => {
                self.selected = usize::MAX;
                self.choose_row();
            }
            Action::Enter => self.enter(),
            Action::Back => self.back(),
            Action::Filter => {
                self.filter.editing = true;
            }
            Action::Sort if self.tab == Tab::Flows => self.flow_sort = self.flow_sort.next(),
            Action::SortReverse if self.tab == Tab::Flows => {
                self.flow_ascending = !self.flow_ascending
            }
            Action::Sort => self.sort = self.sort.next(),
            Action::SortReverse => self.ascending = !self.ascending,
            // a replay pauses like a video: the source holds its position
            Action::Freeze if self.replaying() => self.requests.push(Request::TogglePause),
            Action::Freeze => {
                self.frozen = !self.frozen;
                if self.frozen {
                    // what waits for its rows is not shown until unfrozen
                    let newest = self.queued.take().or(self.awaiting.take());
                    if let Some((_, s)) = newest {
                        self.pending = Some(Arc::unwrap_or_clone(s));
                    }
                } else if let Some(s) = self.pending.take() {
                    self.receive(s);
                }
            }
            Action::FaultsOnly => {
                self.faults_only = !self.faults_only;
                self.selected = 0;
            }
            Action::Units => {
                self.units = if self.units == Units::Bits {
                    Units::Bytes
                } else {
                    Units::Bits
                };
            }
            Action::NextPlane | Action::PrevPlane => {
                let n = self.fabric.planes.len().max(1);
                let d = if a == Action::NextPlane { 1 } else { n - 1 };
                self.plane = (self.plane + d) % n;
                self.path.clear();
                self.cursor = (0, 0);
            }
            Action::SideBySide => self.side_by_side = !self.side_by_side,
            Action::YScale => self.y_fixed = !self.y_fixed,
            Action::SeekBack => self.requests.push(Request::Seek(-1)),
            Action::SeekForward => self.requests.push(Request::Seek(1)),
            Action::Faster => self.requests.push(Request::Speed(2.0)),
            Action::Slower => self.requests.push(Request::Speed(0.5)),
            Action::Tenant => {
                let n = self.tenants.names.len();
                self.tenant = match self.tenant {
                    _ if n == 0 => None,
                    None => Some(0),
                    Some(i) if i + 1 < n => Some(i + 1),
                    Some(_) => None,
                };
                self.selected = 0;
            }
        }
    }

    /// The one link on screen (opened from the links table, or the heat map's
    /// drill-down to a link).
    pub fn watched_link(&self) -> Option<u32> {
        match (self.tab, self.path.last()) {
            (Tab::Links, _) => self.link_open,
            (Tab::Heatmap, Some(Level::Link(l))) => Some(*l),
            _ => None,
        }
    }

    /// Switch to view `tab`, at its top row.
    pub fn show_tab(&mut self, tab: Tab) {
        if tab != self.tab {
            self.tab = tab;
            self.selected = 0;
            self.selected_link = None;
            self.dirty = true;
        }
    }

    /// Is the source a recording being played back?
    pub fn replaying(&self) -> bool {
        matches!(self.status, SourceStatus::Replay { .. })
    }

    fn page(&self) -> usize {
        (self.size.1 as usize).saturating_sub(10).max(1)
    }

    fn in_grid(&self) -> bool {
        self.tab == Tab::Heatmap
            && !matches!(self.path.last(), Some(Level::Cell { .. } | Level::Link(_)))
    }

    fn arrow(&mut self, a: Action) {
        if !self.in_grid() {
            match a {
                Action::Up => self.selected = self.selected.saturating_sub(1),
                Action::Down => self.selected = self.selected.saturating_add(1),
                _ => {}
            }
            return;
        }
        let (r, c) = self.cursor;
        let (rows, cols) = self.binning().map_or((1, 1), |b| (b.bin_rows, b.bin_cols));
        self.cursor = match a {
            Action::Up => (r.saturating_sub(1), c),
            Action::Down => ((r + 1).min(rows.saturating_sub(1)), c),
            Action::Left => (r, c.saturating_sub(1)),
            _ => (r, (c + 1).min(cols.saturating_sub(1))),
        };
    }

    /// The grid the heat map shows now, its zoom window and the pod index (if in a pod).
    pub fn grid(&self) -> Option<(&Grid, Window, Option<usize>)> {
        let plane = self.fabric.planes.get(self.plane)?;
        let mut out = (&plane.top, Window::all(&plane.top), None);
        for l in &self.path {
            match *l {
                Level::Top(w) => out = (&plane.top, w, None),
                Level::Pod { pod, window } => {
                    let g = &plane.pods.get(pod)?.1;
                    let w = if window.rows == 0 {
                        Window::all(g)
                    } else {
                        window
                    };
                    out = (g, w, Some(pod));
                }
                Level::Cell { .. } | Level::Link(_) => {}
            }
        }
        Some(out)
    }

    /// How the current grid window maps onto the heat-map area.
    pub fn binning(&self) -> Option<heatmap::Binning> {
        let (_, w, _) = self.grid()?;
        let (rows, cols) = crate::ui::heat_capacity(self);
        Some(heatmap::Binning::fit(w, rows, cols))
    }

    /// The grids the heat map draws now and their binnings: every plane's top grid side
    /// by side, else the current grid; none outside the heat map's grids.
    pub fn heat_grids(&self) -> Vec<(GridId, heatmap::Binning)> {
        if !self.in_grid() {
            return Vec::new();
        }
        if self.side_by_side && self.fabric.planes.len() > 1 {
            let (rows, cols) = crate::ui::heat_capacity(self);
            return (self.fabric.planes.iter().enumerate())
                .map(|(plane, p)| {
                    let b = heatmap::Binning::fit(Window::all(&p.top), rows, cols);
                    (GridId { plane, pod: None }, b)
                })
                .collect();
        }
        match (self.grid(), self.binning()) {
            (Some((_, _, pod)), Some(b)) => vec![(
                GridId {
                    plane: self.plane,
                    pod,
                },
                b,
            )],
            _ => Vec::new(),
        }
    }

    /// Bring what the next frame reads up to date: bin the grids the heat map shows,
    /// unless the same sample, mask and binning were binned before (redraws reuse them).
    /// Drawing without it is correct, only slower ([`App::heat_panel`]).
    pub fn prepare(&mut self) {
        // also with nothing wanted: the bins then hold no older sample alive
        let wanted = self.heat_grids();
        let mask = self.mask_rows().cloned();
        self.bins
            .update(&self.fabric, self.shown.as_ref(), mask.as_ref(), &wanted);
    }

    /// Grid `id` binned by `binning`: kept by [`App::prepare`], or binned now.
    pub fn heat_panel(&self, id: GridId, binning: heatmap::Binning) -> Cow<'_, Panel> {
        match self.bins.get(id, binning) {
            Some(p) => Cow::Borrowed(p),
            None => Cow::Owned(bins::panel(
                &self.fabric,
                self.current(),
                self.keep_mask(),
                id,
                binning,
            )),
        }
    }

    /// The links of the cell being looked at (drill-down level `Cell`).
    pub fn cell_links(&self) -> Vec<u32> {
        let Some(&Level::Cell { row, col }) = self
            .path
            .iter()
            .rev()
            .find(|l| matches!(l, Level::Cell { .. }))
        else {
            return Vec::new();
        };
        self.grid()
            .map_or(Vec::new(), |(g, _, _)| g.cell(row, col).collect())
    }

    fn enter(&mut self) {
        match self.tab {
            Tab::Heatmap => self.drill(),
            // the link opens in the links view, and Esc comes back to the table there
            Tab::Links if self.link_open.is_none() => {
                let ids = self.table_ids();
                let id = ids
                    .get(self.selected.min(ids.len().saturating_sub(1)))
                    .copied();
                if let Some(id) = id {
                    self.selected_link = Some(id);
                    self.link_open = Some(id);
                    self.start_link_history(id);
                }
            }
            Tab::Links => {}
            Tab::Flows | Tab::Events => {}
        }
    }

    fn drill(&mut self) {
        match self.path.last() {
            Some(Level::Link(_)) => {}
            Some(Level::Cell { .. }) => {
                let links = self.cell_links();
                if let Some(&id) = links.get(self.selected.min(links.len().saturating_sub(1))) {
                    self.open_link(id);
                }
            }
            _ => {
                let Some(b) = self.binning() else { return };
                let Some((g, _, pod)) = self.grid() else {
                    return;
                };
                if let Some(next) = heatmap::drill(g, &b, self.cursor.0, self.cursor.1, pod) {
                    self.path.push(next);
                    self.cursor = (0, 0);
                    self.selected = 0;
                }
            }
        }
    }

    fn open_link(&mut self, id: u32) {
        self.path.push(Level::Link(id));
        self.start_link_history(id);
    }

    fn start_link_history(&mut self, id: u32) {
        self.link_history.clear();
        if let Some(s) = &self.shown {
            self.link_history.push_back(s.links[id as usize]);
        }
    }

    fn back(&mut self) {
        if self.tab == Tab::Links && self.link_open.take().is_some() {
            return;
        }
        let filtered = self.filter.expr.is_some() || self.filter.error.is_some();
        if filtered
            && (self.tab == Tab::Links || (self.tab == Tab::Heatmap && self.path.is_empty()))
        {
            self.filter = FilterState::default();
            return;
        }
        if self.tab == Tab::Heatmap && self.path.pop().is_some() {
            self.cursor = (0, 0);
            self.selected = 0;
        }
    }

    /// Breadcrumb of the heat-map drill-down.
    pub fn breadcrumb(&self) -> Vec<String> {
        let mut out = vec![format!(
            "plane {}",
            self.fabric.planes.get(self.plane).map_or(0, |p| p.plane)
        )];
        let Some(plane) = self.fabric.planes.get(self.plane) else {
            return out;
        };
        let mut grid = &plane.top;
        for l in &self.path {
            out.push(match *l {
                Level::Top(w) => {
                    grid = &plane.top;
                    window_label(grid, w)
                }
                Level::Pod { pod, window } => {
                    let Some((num, g)) = plane.pods.get(pod) else {
                        break;
                    };
                    grid = g;
                    if window.rows == 0 {
                        format!("pod {num}")
                    } else {
                        window_label(grid, window)
                    }
                }
                Level::Cell { row, col } => {
                    let name =
                        |v: &[String], i: u32| v.get(i as usize).cloned().unwrap_or_default();
                    format!("{} ↔ {}", name(&grid.rows, row), name(&grid.cols, col))
                }
                Level::Link(id) => {
                    let x = &self.fabric.links[id as usize];
                    format!("link {id} (ports {} ↔ {})", x.a_port, x.b_port)
                }
            });
        }
        out
    }

    /// The links table's rows, in order (a copy of [`App::table_ids`]).
    pub fn table_rows(&self) -> Vec<u32> {
        self.table_ids().to_vec()
    }

    /// Every link the table lists, in order: for the default query the sample's own
    /// order by utilisation, else the rows from the worker (nothing is filtered or
    /// sorted here, on the UI thread).
    pub fn table_ids(&self) -> &[u32] {
        match &self.shown {
            Some(s) if !self.needs_rows(s) => &s.by_util,
            _ => self.rows.as_ref().map_or(&[], |r| &r.order),
        }
    }

    /// Rows for the query in force are being computed (the screen shows the last ones).
    pub fn rows_pending(&self) -> bool {
        self.requested.is_some()
    }

    /// The heat map's mask (one entry per link), `None` when every link is kept: no
    /// filter, or its first rows have not arrived yet.
    pub fn keep_mask(&self) -> Option<&[bool]> {
        self.mask_rows().map(|r| &r.keep[..])
    }

    /// The rows whose `keep` is the heat map's mask (see [`App::keep_mask`]).
    fn mask_rows(&self) -> Option<&Arc<Rows>> {
        if self.query.keeps_all() {
            return None;
        }
        self.rows.as_ref()
    }

    /// Does the filter (and the faults-only switch) keep link `id`? The heat map's mask,
    /// from the rows; every link until the first rows arrive.
    pub fn keeps(&self, id: u32) -> bool {
        if self.query.keeps_all() {
            return true;
        }
        self.rows
            .as_ref()
            .is_none_or(|r| r.keep.get(id as usize).copied().unwrap_or(false))
    }
}

fn window_label(g: &Grid, w: Window) -> String {
    let name = |v: &[String], i: u32| v.get(i as usize).cloned().unwrap_or_default();
    if w.rows == 0 || w.cols == 0 {
        return "empty".into();
    }
    format!(
        "{}…{} × {}…{}",
        name(&g.rows, w.row0),
        name(&g.rows, w.row0 + w.rows - 1),
        name(&g.cols, w.col0),
        name(&g.cols, w.col0 + w.cols - 1)
    )
}
