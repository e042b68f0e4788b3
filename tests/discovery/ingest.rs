//! Ingestion: the demo handbook directory, JSON lines, and the refusals that name their file
//! or line.

use interlock::discovery::{
    load_directory, parse_document, parse_json_lines, IngestError, MAX_FILE_BYTES,
};

use crate::fixtures::{handbook, HR_DOC};

#[test]
fn handbook_directory_loads() {
    let assets = handbook();
    assert!((30..=40).contains(&assets.len()), "{}", assets.len());
    let hr_only: Vec<&str> = assets
        .iter()
        .filter(|a| a.audiences.iter().any(|l| l == "hr"))
        .map(|a| a.id.as_str())
        .collect();
    assert_eq!(hr_only, vec![HR_DOC]);
    let cross: Vec<(&str, &str)> = assets
        .iter()
        .flat_map(|a| a.relations.iter().map(move |r| (a, r)))
        .filter(|(_, r)| r.to_source.is_some())
        .map(|(a, r)| (a.id.as_str(), r.to_asset.as_str()))
        .collect();
    assert_eq!(cross, vec![("staff-discount", "table:public.products")]);
    for asset in &assets {
        assert!(
            !asset.title.is_empty() && !asset.category_path.is_empty(),
            "{}",
            asset.id
        );
        assert!(
            asset.created_at.is_some() && asset.updated_at.is_some(),
            "{}",
            asset.id
        );
        let words = asset.body.split_whitespace().count();
        assert!((60..=320).contains(&words), "{}: {words} words", asset.id);
        assert!(
            !asset.body.starts_with("# "),
            "{}: heading left in body",
            asset.id
        );
    }
    // Every same-source relation points at a document of the handbook.
    for asset in &assets {
        for r in asset.relations.iter().filter(|r| r.to_source.is_none()) {
            assert!(
                assets.iter().any(|a| a.id == r.to_asset),
                "{} -> {}",
                asset.id,
                r.to_asset
            );
        }
    }
    // All three formats are represented: YAML-ish, TOML and JSON front matter.
    let pto = assets.iter().find(|a| a.id == "pto-policy").unwrap();
    assert_eq!(pto.title, "Paid time off (PTO) and vacation policy");
    assert_eq!(pto.category_path, "people/leave");
    let holidays = assets
        .iter()
        .find(|a| a.id == "public-holidays-2026")
        .unwrap();
    assert!(holidays.audiences.is_empty());
    let oncall = assets.iter().find(|a| a.id == "oncall-rotation").unwrap();
    assert_eq!(oncall.audiences, vec!["engineering"]);
}

#[test]
fn documents_take_defaults_from_their_path() {
    let cases = [
        // (path, text, id, title, category, document type)
        (
            "people/leave/x.md",
            "# Leave\n\nbody",
            "people/leave/x",
            "Leave",
            "people/leave",
            "document",
        ),
        (
            "notes.txt",
            "plain text without a heading",
            "notes",
            "notes",
            "",
            "document",
        ),
        (
            "a/b.md",
            "---\nid: custom\ntitle: Given\ncategory: c/d\ndocument_type: faq\n---\n# Heading\n",
            "custom",
            "Given",
            "c/d",
            "faq",
        ),
        (
            "a/doc.json",
            r#"{"title": "J", "body": "text"}"#,
            "a/doc",
            "J",
            "a",
            "document",
        ),
    ];
    for (path, text, id, title, category, doc_type) in cases {
        let asset = parse_document(path, text).unwrap_or_else(|e| panic!("{path}: {e}"));
        assert_eq!(
            (
                asset.id.as_str(),
                asset.title.as_str(),
                asset.category_path.as_str(),
                asset.document_type.as_str()
            ),
            (id, title, category, doc_type),
            "{path}"
        );
    }
}

#[test]
fn json_lines_errors_name_the_line() {
    let good = r#"{"id": "a", "title": "A", "body": "x"}"#;
    let cases = [
        (format!("{good}\nnot json"), 2, "invalid JSON"),
        (format!("{good}\n\n[1, 2]"), 3, "object"),
        (format!("{good}\n{{\"id\": \"b\"}}"), 2, "title"),
        (format!("{{\"title\": \"B\"}}\n{good}"), 1, "id"),
        (
            format!("{good}\n{{\"id\": \"b\", \"title\": \"B\", \"audiance\": []}}"),
            2,
            "audiance",
        ),
        (
            format!("{good}\n{{\"id\": \"b\", \"title\": \"B\", \"updated\": \"soon\"}}"),
            2,
            "RFC 3339",
        ),
    ];
    for (body, line, want) in cases {
        let err = parse_json_lines(&body).unwrap_err();
        let text = err.to_string();
        assert!(
            matches!(err, IngestError::Line { line: l, .. } if l == line),
            "{body}: {text}"
        );
        assert!(
            text.starts_with(&format!("line {line}: ")) && text.contains(want),
            "{text}"
        );
    }
    let dup = parse_json_lines(&format!("{good}\n{good}")).unwrap_err();
    assert_eq!(
        dup.to_string(),
        "asset id \"a\" is used by both line 1 and line 2"
    );
    let ok = parse_json_lines(&format!("{good}\n\n{}\n", good.replace("\"a\"", "\"b\""))).unwrap();
    assert_eq!(ok.len(), 2);
}

#[test]
fn directory_refusals_name_the_file() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("sub")).unwrap();
    std::fs::write(dir.path().join("sub/ok.md"), "# Ok\n").unwrap();
    std::fs::write(dir.path().join(".hidden.md"), "---\nbroken").unwrap();
    std::fs::write(dir.path().join("image.png"), [0xff, 0xfe]).unwrap();
    assert_eq!(load_directory(dir.path()).unwrap().len(), 1);

    std::fs::write(dir.path().join("sub/bad.md"), "---\ntitle: x\n").unwrap();
    let err = load_directory(dir.path()).unwrap_err().to_string();
    assert!(
        err.starts_with("sub/bad.md: ") && err.contains("never closed"),
        "{err}"
    );
    std::fs::remove_file(dir.path().join("sub/bad.md")).unwrap();

    std::fs::write(
        dir.path().join("big.txt"),
        vec![b'a'; MAX_FILE_BYTES as usize + 1],
    )
    .unwrap();
    let err = load_directory(dir.path()).unwrap_err();
    assert!(
        matches!(err, IngestError::TooLarge { ref path, .. } if path == "big.txt"),
        "{err}"
    );
    assert!(
        err.to_string()
            .contains("larger than the 1048576-byte limit"),
        "{err}"
    );
    std::fs::remove_file(dir.path().join("big.txt")).unwrap();

    std::fs::write(dir.path().join("latin1.txt"), [0x63, 0x61, 0x66, 0xe9]).unwrap();
    let err = load_directory(dir.path()).unwrap_err();
    assert!(matches!(err, IngestError::NotUtf8 { .. }), "{err}");
    std::fs::remove_file(dir.path().join("latin1.txt")).unwrap();

    std::fs::write(dir.path().join("dup.md"), "---\nid: sub/ok\n---\n# Dup\n").unwrap();
    let err = load_directory(dir.path()).unwrap_err().to_string();
    assert_eq!(
        err,
        "asset id \"sub/ok\" is used by both dup.md and sub/ok.md"
    );
}
