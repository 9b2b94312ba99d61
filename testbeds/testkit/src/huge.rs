//! Files past a reader's size cap, for the tests that check every file a user names is
//! read no further than its cap and refused naming the file and the limit.

use std::path::{Path, PathBuf};

/// Two files past a cap in a temporary directory of their own (removed on drop): a
/// sparse file one byte past the cap, and a link to `/dev/zero` (endless), both named
/// with the extension the reader expects.
#[derive(Debug)]
pub struct HugeFiles {
    dir: PathBuf,
    sparse: PathBuf,
    endless: PathBuf,
}

impl HugeFiles {
    /// `cap + 1` bytes in `huge.EXT` and an endless `endless.EXT`; `tag` names the
    /// directory (with the process id, so parallel runs do not collide).
    pub fn new(tag: &str, ext: &str, cap: u64) -> HugeFiles {
        let dir = std::env::temp_dir().join(format!("{tag}-huge-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("creating the huge files' directory");
        let sparse = dir.join(format!("huge.{ext}"));
        std::fs::File::create(&sparse)
            .and_then(|f| f.set_len(cap + 1))
            .expect("creating a sparse file");
        let endless = dir.join(format!("endless.{ext}"));
        std::os::unix::fs::symlink("/dev/zero", &endless).expect("linking /dev/zero");
        HugeFiles {
            dir,
            sparse,
            endless,
        }
    }

    /// The sparse file, one byte past the cap.
    pub fn sparse(&self) -> &Path {
        &self.sparse
    }

    /// Both files: the sparse one and the endless one.
    pub fn all(&self) -> [&Path; 2] {
        [&self.sparse, &self.endless]
    }
}

impl Drop for HugeFiles {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
