//! [`Ui`]: an [`App`] and a terminal, drawing only when the app asks for it and at most
//! every [`MIN_FRAME`] (10 Hz). Generic over the backend so tests use `TestBackend`
//! and count draws.

use crate::app::{App, Msg};
use ratatui::Terminal;
use ratatui::backend::Backend;
use std::time::{Duration, Instant};

/// Shortest time between two draws (10 Hz cap).
pub const MIN_FRAME: Duration = Duration::from_millis(100);

/// An app bound to a terminal.
#[derive(Debug)]
pub struct Ui<B: Backend> {
    /// The state.
    pub app: App,
    /// The terminal.
    pub term: Terminal<B>,
    /// Frames drawn so far.
    pub draws: u64,
    /// Time the last frame took to draw.
    pub last_draw: Duration,
    dirty: bool,
    last_at: Option<Instant>,
}

impl<B: Backend> Ui<B> {
    /// A UI drawing `app` on `term`.
    pub fn new(mut app: App, term: Terminal<B>) -> Ui<B> {
        if let Ok(s) = term.size() {
            app.update(Msg::Resize(s.width, s.height));
        }
        Ui {
            app,
            term,
            draws: 0,
            last_draw: Duration::ZERO,
            dirty: true,
            last_at: None,
        }
    }

    /// Apply a message.
    pub fn handle(&mut self, m: Msg) {
        self.app.update(m);
        self.dirty |= self.app.take_dirty();
    }

    /// When the next draw may happen, if one is pending (None: nothing to draw).
    pub fn next_draw(&self, now: Instant) -> Option<Instant> {
        if !self.dirty {
            return None;
        }
        Some(self.last_at.map_or(now, |t| (t + MIN_FRAME).max(now)))
    }

    /// Draw if something changed and the cap allows it at `now`. Returns whether it drew.
    pub fn draw_due(&mut self, now: Instant) -> Result<bool, B::Error> {
        match self.next_draw(now) {
            Some(t) if t <= now => {
                self.draw()?;
                self.last_at = Some(now);
                Ok(true)
            }
            _ => Ok(false),
        }
    }

    /// Draw now, whatever the cap.
    pub fn draw(&mut self) -> Result<(), B::Error> {
        let t = Instant::now();
        self.app.prepare();
        let app = &self.app;
        self.term.draw(|f| crate::ui::render(f, app))?;
        self.last_draw = t.elapsed();
        self.draws += 1;
        self.dirty = false;
        Ok(())
    }
}
