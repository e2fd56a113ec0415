//! The hand-written libbpf C reference programs (`bench/reference/`): built on
//! first use with clang (BPF; the file-column ones against a vmlinux.h bpftool dumps
//! from the running kernel) and cc (the loader, linked with the system libbpf)
//! into the results directory.

use super::Ctx;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The sources, compiled into the binary so the bench runs from anywhere.
const SOURCES: &[(&str, &str)] = &[
    ("common.h", include_str!("../../../bench/reference/common.h")),
    ("loader.c", include_str!("../../../bench/reference/loader.c")),
    ("count.bpf.c", include_str!("../../../bench/reference/count.bpf.c")),
    ("key_pid.bpf.c", include_str!("../../../bench/reference/key_pid.bpf.c")),
    ("hist.bpf.c", include_str!("../../../bench/reference/hist.bpf.c")),
    ("timing.bpf.c", include_str!("../../../bench/reference/timing.bpf.c")),
    ("per_event.bpf.c", include_str!("../../../bench/reference/per_event.bpf.c")),
    ("file_common.h", include_str!("../../../bench/reference/file_common.h")),
    ("file_inode.bpf.c", include_str!("../../../bench/reference/file_inode.bpf.c")),
    ("file_fs_name.bpf.c", include_str!("../../../bench/reference/file_fs_name.bpf.c")),
    ("report_floor.bpf.c", include_str!("../../../bench/reference/report_floor.bpf.c")),
];

/// Built reference programs.
pub struct References {
    /// The loader binary.
    pub loader: PathBuf,
    dir: PathBuf,
}

fn run(cmd: &mut Command) -> Result<(), String> {
    let out = cmd.output().map_err(|e| format!("{cmd:?}: {e}"))?;
    if !out.status.success() {
        return Err(format!("{cmd:?} failed: {}", String::from_utf8_lossy(&out.stderr).trim()));
    }
    Ok(())
}

impl References {
    /// Writes the sources to `OUT/reference/` and builds every program once.
    pub fn build(ctx: &Ctx) -> Result<References, String> {
        let dir = ctx.out.join("reference");
        std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        let mut changed = false;
        for (name, text) in SOURCES {
            let p = dir.join(name);
            if std::fs::read_to_string(&p).ok().as_deref() != Some(*text) {
                std::fs::write(&p, text).map_err(|e| format!("{}: {e}", p.display()))?;
                changed = true;
            }
        }
        let loader = dir.join("loader");
        // The file-column references include the running kernel's types.
        let vmlinux = dir.join("vmlinux.h");
        if !vmlinux.exists() {
            let out = Command::new("bpftool")
                .args(["btf", "dump", "file", "/sys/kernel/btf/vmlinux", "format", "c"])
                .output()
                .map_err(|e| format!("bpftool: {e}"))?;
            if !out.status.success() {
                return Err(format!("bpftool btf dump failed: {}", String::from_utf8_lossy(&out.stderr).trim()));
            }
            std::fs::write(&vmlinux, &out.stdout).map_err(|e| format!("{}: {e}", vmlinux.display()))?;
            changed = true;
        }
        if changed || !loader.exists() {
            run(Command::new("cc").args(["-O2", "-o"]).arg(&loader).arg(dir.join("loader.c")).arg("-lbpf"))?;
            for (name, _) in SOURCES.iter().filter(|(n, _)| n.ends_with(".bpf.c")) {
                let obj = dir.join(name.replace(".bpf.c", ".bpf.o"));
                run(Command::new("clang")
                    .args(["-O2", "-g", "-target", "bpf", "-mcpu=v3", "-I/usr/include/x86_64-linux-gnu", "-c"])
                    .arg(dir.join(name))
                    .arg("-o")
                    .arg(&obj))?;
            }
        }
        Ok(References { loader, dir })
    }

    /// The command line loading program `name` (e.g. `key_pid`), rows to `rows_out`.
    pub fn argv(&self, name: &str, rows_out: &Path) -> Vec<String> {
        vec![
            self.loader.display().to_string(),
            self.dir.join(format!("{name}.bpf.o")).display().to_string(),
            rows_out.display().to_string(),
        ]
    }
}
