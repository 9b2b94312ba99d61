//! Where `POST /api/v1/recording` may write: only inside the directory given at start-up
//! (`--record-dir`), under a plain file name (no absolute path, no `/`, no `..`), never
//! through or over an existing file or symlink, at most `--record-max-files` files there
//! and `--record-max-bytes` per recording. Without `--record-dir` nothing is recorded
//! over the API: the daemon may run as root, and a caller must not choose its files.

use std::fs::File;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

/// The recording directory and its caps.
#[derive(Debug, Clone, PartialEq)]
pub struct RecordDir {
    /// The directory, as given (checked at start-up to be one).
    pub dir: PathBuf,
    /// Most files the directory may hold before a new recording is refused.
    pub max_files: usize,
    /// Largest recording, bytes; the recording stops there.
    pub max_bytes: u64,
}

/// Why a recording was refused.
#[derive(Debug, Clone, PartialEq)]
pub enum Refusal {
    /// The name is not a plain file name (400).
    BadName(String),
    /// The directory holds `max_files` files already (507).
    Full(String),
    /// The file could not be created (409: it exists; or an I/O error).
    Create(String),
}

impl RecordDir {
    /// Checks at start-up that `dir` is a directory.
    pub fn check(&self) -> Result<(), String> {
        match std::fs::metadata(&self.dir) {
            Ok(m) if m.is_dir() => Ok(()),
            Ok(_) => Err(format!(
                "--record-dir {}: not a directory",
                self.dir.display()
            )),
            Err(e) => Err(format!("--record-dir {}: {e}", self.dir.display())),
        }
    }

    /// The path of recording `name` inside the directory, when `name` is a plain file
    /// name: not empty, not absolute, no `/`, not `.` or `..`, no NUL, at most 255 bytes.
    pub fn resolve(&self, name: &str) -> Result<PathBuf, Refusal> {
        let bad = |why: &str| {
            Err(Refusal::BadName(format!(
                "recording path {name:?}: {why}; give a plain file name, written inside the daemon's --record-dir"
            )))
        };
        if name.is_empty() {
            return bad("empty");
        }
        if name.starts_with('/') {
            return bad("absolute paths are refused");
        }
        if name.contains('/') {
            return bad("directories are refused");
        }
        if name == "." || name == ".." {
            return bad("not a file name");
        }
        if name.contains('\0') || name.len() > 255 {
            return bad("not a valid file name");
        }
        Ok(self.dir.join(name))
    }

    /// Creates the file for a new recording at `path` (from [`RecordDir::resolve`]):
    /// refused when the directory is full, and never through a symlink or over an
    /// existing file (`O_CREAT | O_EXCL | O_NOFOLLOW`).
    pub fn create(&self, path: &Path) -> Result<File, Refusal> {
        let files = std::fs::read_dir(&self.dir)
            .map_err(|e| Refusal::Create(format!("{}: {e}", self.dir.display())))?
            .count();
        if files >= self.max_files {
            return Err(Refusal::Full(format!(
                "{} holds {files} files, the most allowed (--record-max-files {}); remove old recordings first",
                self.dir.display(),
                self.max_files
            )));
        }
        File::options()
            .write(true)
            .create_new(true)
            .custom_flags(libc::O_NOFOLLOW)
            .open(path)
            .map_err(|e| Refusal::Create(format!("{}: {e}", path.display())))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dir() -> RecordDir {
        RecordDir {
            dir: PathBuf::from("/var/lib/fabric/rec"),
            max_files: 2,
            max_bytes: 1 << 20,
        }
    }

    #[test]
    fn only_plain_file_names_resolve_inside_the_directory() {
        let d = dir();
        assert_eq!(
            d.resolve("run.rec").unwrap(),
            PathBuf::from("/var/lib/fabric/rec/run.rec")
        );
        for name in ["", "/etc/passwd", "../x", "a/../../x", "sub/x", ".", ".."] {
            match d.resolve(name) {
                Err(Refusal::BadName(msg)) => assert!(msg.contains("--record-dir"), "{msg}"),
                other => panic!("{name:?}: {other:?}"),
            }
        }
    }

    #[test]
    fn a_symlink_an_existing_file_and_a_full_directory_are_refused() {
        let tmp = std::env::temp_dir().join(format!("fabric-recdir-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&tmp);
        std::fs::create_dir_all(&tmp).unwrap();
        let d = RecordDir {
            dir: tmp.clone(),
            ..dir()
        };
        d.check().unwrap();
        std::os::unix::fs::symlink("/tmp/outside-target", tmp.join("link")).unwrap();
        assert!(matches!(
            d.create(&tmp.join("link")),
            Err(Refusal::Create(_))
        ));
        assert!(!Path::new("/tmp/outside-target").exists());
        d.create(&tmp.join("a")).unwrap();
        assert!(matches!(d.create(&tmp.join("b")), Err(Refusal::Full(_))));
        std::fs::remove_dir_all(&tmp).unwrap();
        assert!(d.check().is_err());
    }
}
