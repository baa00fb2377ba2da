use super::yaml_depth::first_too_deep;
use super::*;

fn nested_flow(levels: usize) -> String {
    format!("key: {}x{}\n", "[".repeat(levels), "]".repeat(levels))
}

#[test]
fn deep_flow_block_and_mixed_nesting_is_refused_at_the_line_that_passes_the_limit() {
    // 200 000 levels: the parser alone takes minutes; the scan stops at the limit.
    let err = from_yaml::<yaml_serde::Value>(&nested_flow(200_000)).unwrap_err();
    assert_eq!((err.line(), err.column()), (1, 6 + MAX_YAML_DEPTH - 1), "{err}");
    assert!(err.message().contains("nested deeper than 100 levels"), "{err}");
    // `- - - …` on one line, and the flow form of mappings.
    let dashes = format!("a: 1\nb:\n{}x\n", "- ".repeat(200_000));
    assert_eq!(check_yaml_depth(&dashes).unwrap_err().line(), 3);
    let maps = format!("# top\n{}", "{a: ".repeat(200_000));
    assert_eq!(check_yaml_depth(&maps).unwrap_err().line(), 2);
    // A flow collection over many lines, and blocks indented one more on each line.
    let lines = format!("k:\n  [\n{}", "[\n".repeat(500));
    assert_eq!(check_yaml_depth(&lines).unwrap_err().line(), 101, "the mapping is a level");
    let blocks: String = (0..150).map(|n| format!("{}k{n}:\n", " ".repeat(n))).collect();
    assert_eq!(check_yaml_depth(&blocks).unwrap_err().line(), MAX_YAML_DEPTH + 1);
}

#[test]
fn nesting_up_to_the_limit_is_read_and_one_more_is_not() {
    let at = format!("{}x{}", "[".repeat(MAX_YAML_DEPTH), "]".repeat(MAX_YAML_DEPTH));
    assert!(check_yaml_depth(&at).is_ok());
    let value: yaml_serde::Value = from_yaml(&at).unwrap();
    assert!(value.is_sequence());
    let past = format!("[{at}]");
    assert_eq!(check_yaml_depth(&past).unwrap_err().column(), MAX_YAML_DEPTH + 1);
}

#[test]
fn brackets_in_quotes_comments_block_scalars_and_plain_words_do_not_count() {
    let deep = "[{".repeat(300);
    let text = format!(
        "a: \"{deep}\"\nb: '{deep} it''s'\n# {deep}\nc: |\n  {deep}\n      {deep}\n    {deep}\nd: x{deep}\ne: >-\n\n  {deep}\nf: \"multi\n  line {deep}\n  \"\ng: [\"{deep}\", '{deep}', x] # {deep}\n- {{'k': \"{deep}\"}}\n"
    );
    assert_eq!(first_too_deep(&text, MAX_YAML_DEPTH), None, "{text}");
    // Real files merlya ships, and what merlya writes, pass.
    for shipped in [
        crate::config::DEFAULT_CONFIG_YAML,
        crate::safety::spec::SPECS_YAML,
        include_str!("../../themes/dark.yaml"),
        include_str!("../../keymaps/vim.yaml"),
    ] {
        assert_eq!(first_too_deep(shipped, 20), None);
    }
}

#[test]
fn a_yaml_error_keeps_its_place_apart_and_cuts_a_long_value() {
    let value = "A".repeat(10 * 1024 * 1024);
    let err = from_yaml::<std::collections::BTreeMap<String, u16>>(&format!("port: {value}\n")).unwrap_err();
    assert_eq!(err.line(), 1);
    assert!(err.message().len() < 400, "{} bytes", err.message().len());
    assert!(err.message().contains("characters cut") && err.message().contains("expected u16"), "{err}");
    assert!(!err.message().contains(" at line "), "{err}");
    assert!(err.to_string().ends_with("at line 1 column 7"), "{err}");
}

#[test]
fn files_that_are_too_large_folders_or_not_utf8_are_named_errors() {
    let dir = tempfile::tempdir().unwrap();
    let big = dir.path().join("big.yaml");
    std::fs::write(&big, vec![b'a'; 2048]).unwrap();
    let err = read_text(&big, 1024, "a test file").unwrap_err();
    assert!(matches!(err.problem, Problem::TooLarge { size: 2048, limit: 1024, .. }), "{err}");
    assert!(err.to_string().starts_with(&big.display().to_string()), "{err}");
    assert!(err.to_string().contains("at most 1.0 KiB of a test file"), "{err}");

    let folder = dir.path().join("folder.yaml");
    std::fs::create_dir(&folder).unwrap();
    assert!(matches!(read_optional(&folder, 1024, "x").unwrap_err().problem, Problem::Folder));
    assert!(read_optional(&dir.path().join("missing.yaml"), 1024, "x").unwrap().is_none());

    let latin1 = dir.path().join("latin1.yaml");
    std::fs::write(&latin1, b"a: 1\nname: caf\xe9\n").unwrap();
    let err = read_text(&latin1, 1024, "x").unwrap_err();
    assert_eq!(err.line, Some(2));
    assert!(matches!(err.problem, Problem::NotUtf8 { column: 10, byte: 0xe9 }), "{err}");
    assert!(err.to_string().contains("latin1.yaml:2: column 10: byte 0xe9 is not UTF-8"), "{err}");

    // A device that never ends is read only to the limit.
    let err = read_text(Path::new("/dev/zero"), 1024, "x").unwrap_err();
    assert!(matches!(err.problem, Problem::TooLarge { size: 1025, .. }), "{err}");
}
