//! Reading members out of package archives: zip (wheels) and gzipped tar (npm tarballs).

use std::fs::File;
use std::io::{BufReader, Read};
use std::path::Path;

use crate::catalog::ArchiveKind;
use crate::error::{Error, io};

/// The archive member at `member`, read whole (at most `limit` bytes).
pub(crate) fn read_member(
    archive: &Path,
    kind: ArchiveKind,
    member: &str,
    limit: u64,
) -> Result<Vec<u8>, Error> {
    let bad = |reason: String| Error::Archive {
        archive: archive.to_path_buf(),
        reason,
    };
    let file = File::open(archive).map_err(io(archive))?;
    let mut data = Vec::new();
    match kind {
        ArchiveKind::Zip => {
            let mut zip = zip::ZipArchive::new(BufReader::new(file))
                .map_err(|e| bad(format!("not a valid zip file ({e})")))?;
            let entry = zip
                .by_name(member)
                .map_err(|e| bad(format!("no {member} in it ({e})")))?;
            entry
                .take(limit)
                .read_to_end(&mut data)
                .map_err(|e| bad(format!("{member}: {e}")))?;
        }
        ArchiveKind::TarGz => {
            let gz = flate2::read::GzDecoder::new(BufReader::new(file));
            let mut tar = tar::Archive::new(gz);
            let entries = tar
                .entries()
                .map_err(|e| bad(format!("not a valid .tgz file ({e})")))?;
            let mut found = false;
            for entry in entries {
                let entry = entry.map_err(|e| bad(format!("not a valid .tgz file ({e})")))?;
                let path = entry.path().map_err(|e| bad(e.to_string()))?;
                if path.to_str() == Some(member) {
                    entry
                        .take(limit)
                        .read_to_end(&mut data)
                        .map_err(|e| bad(format!("{member}: {e}")))?;
                    found = true;
                    break;
                }
            }
            if !found {
                return Err(bad(format!("no {member} in it")));
            }
        }
    }
    Ok(data)
}

/// Unpacks every file of a zip archive under `prefix` into `dest` (the path below `prefix`
/// kept); returns how many files. Paths that would leave `dest` are refused.
pub(crate) fn unpack_zip_tree(archive: &Path, prefix: &str, dest: &Path) -> Result<usize, Error> {
    let bad = |reason: String| Error::Archive {
        archive: archive.to_path_buf(),
        reason,
    };
    let file = File::open(archive).map_err(io(archive))?;
    let mut zip = zip::ZipArchive::new(BufReader::new(file))
        .map_err(|e| bad(format!("not a valid zip file ({e})")))?;
    let mut count = 0;
    for i in 0..zip.len() {
        let mut entry = zip.by_index(i).map_err(|e| bad(e.to_string()))?;
        let Some(name) = entry.enclosed_name() else {
            continue;
        };
        let Ok(rel) = name.strip_prefix(prefix) else {
            continue;
        };
        if entry.is_dir() || rel.as_os_str().is_empty() {
            continue;
        }
        let target = dest.join(rel);
        if let Some(parent) = target.parent() {
            std::fs::create_dir_all(parent).map_err(io(parent))?;
        }
        let mut out = File::create(&target).map_err(io(&target))?;
        std::io::copy(&mut entry, &mut out).map_err(io(&target))?;
        count += 1;
    }
    Ok(count)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn temp(name: &str) -> std::path::PathBuf {
        let dir =
            std::env::temp_dir().join(format!("heimdall-extract-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn a_member_of_a_tarball_is_read_whole_and_bounded() {
        let dir = temp("tgz");
        let path = dir.join("p.tgz");
        let gz = flate2::write::GzEncoder::new(
            File::create(&path).unwrap(),
            flate2::Compression::fast(),
        );
        let mut tar = tar::Builder::new(gz);
        for (name, data) in [
            ("package/a.txt", &b"aaaa"[..]),
            ("package/b.data", b"labels|model"),
        ] {
            let mut header = tar::Header::new_gnu();
            header.set_size(data.len() as u64);
            header.set_mode(0o644);
            header.set_cksum();
            tar.append_data(&mut header, name, data).unwrap();
        }
        tar.into_inner().unwrap().finish().unwrap();
        let got = read_member(&path, ArchiveKind::TarGz, "package/b.data", 100).unwrap();
        assert_eq!(got, b"labels|model");
        let short = read_member(&path, ArchiveKind::TarGz, "package/b.data", 6).unwrap();
        assert_eq!(short, b"labels");
        let err = read_member(&path, ArchiveKind::TarGz, "package/c", 100).unwrap_err();
        assert!(err.to_string().contains("no package/c"), "{err}");
        let err = read_member(&path, ArchiveKind::Zip, "package/b.data", 100).unwrap_err();
        assert!(err.to_string().contains("not a valid zip"), "{err}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_zip_tree_is_unpacked_below_its_prefix_only() {
        let dir = temp("zip");
        let path = dir.join("w.whl");
        let mut zip = zip::ZipWriter::new(File::create(&path).unwrap());
        let opts = zip::write::SimpleFileOptions::default()
            .compression_method(zip::CompressionMethod::Deflated);
        for (name, data) in [
            ("pkg/data/node/t1/model.onnx", "m1"),
            ("pkg/data/node/t2/x.pb", "x"),
            ("pkg/other.py", "o"),
        ] {
            zip.start_file(name, opts).unwrap();
            zip.write_all(data.as_bytes()).unwrap();
        }
        zip.finish().unwrap();
        let out = dir.join("out");
        assert_eq!(unpack_zip_tree(&path, "pkg/data/node/", &out).unwrap(), 2);
        assert_eq!(std::fs::read(out.join("t1/model.onnx")).unwrap(), b"m1");
        assert!(!out.join("other.py").exists());
        let m = read_member(&path, ArchiveKind::Zip, "pkg/other.py", 10).unwrap();
        assert_eq!(m, b"o");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
