//! How a file the agent writes travels to its host — its content base64-encoded in one
//! `printf … | base64 -d > PATH` line, so no quoting of the content can go wrong — and how that line
//! is read back for a person (the incident report shows the file and its size, not the encoding).

use base64::Engine;

/// The command that writes `content` to `path`.
pub fn command(path: &str, content: &[u8]) -> String {
    let encoded = base64::engine::general_purpose::STANDARD.encode(content);
    format!("printf '%s' '{encoded}' | base64 -d > '{path}'")
}

/// The file a [`command`] writes and how many bytes, if `line` is one.
pub fn read_back(line: &str) -> Option<(String, usize)> {
    let rest = line.trim().strip_prefix("printf '%s' '")?;
    let (encoded, rest) = rest.split_once("' | base64 -d > ")?;
    let path = rest.trim_matches('\'');
    let bytes = base64::engine::general_purpose::STANDARD.decode(encoded).ok()?.len();
    Some((path.to_string(), bytes))
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_write_is_read_back_as_its_file_and_size() {
        let line = super::command("/etc/motd", b"hello\n");
        assert_eq!(super::read_back(&line), Some(("/etc/motd".to_string(), 6)));
        assert_eq!(super::read_back("df -h"), None);
    }
}
