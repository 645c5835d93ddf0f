//! The documentation's code stays true to the code it shows.

use std::path::Path;

fn read(rel: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(rel);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The ```rust blocks of a Markdown text.
fn rust_blocks(md: &str) -> Vec<String> {
    let (mut blocks, mut current): (Vec<String>, Option<String>) = (Vec::new(), None);
    for line in md.lines() {
        match current.as_mut() {
            None if line.trim_start() == "```rust" => current = Some(String::new()),
            None => {}
            Some(block) if line.trim_start() == "```" => {
                blocks.push(std::mem::take(block));
                current = None;
            }
            Some(block) => {
                block.push_str(line);
                block.push('\n');
            }
        }
    }
    assert!(current.is_none(), "an unterminated code block");
    blocks
}

#[test]
fn every_step_of_the_policy_walkthrough_is_in_the_lru_policy_as_shown() {
    let (doc, code) = (read("docs/policies.md"), read("src/policy/lru.rs"));
    let blocks = rust_blocks(&doc);
    assert!(blocks.len() >= 7, "the walkthrough shows {} blocks", blocks.len());
    for block in &blocks {
        assert!(code.contains(block.as_str()), "docs/policies.md shows code that src/policy/lru.rs does not have:\n{block}");
    }
}

#[test]
fn the_lru_policy_stays_under_150_lines() {
    let lines = read("src/policy/lru.rs").lines().count();
    assert!(lines < 150, "src/policy/lru.rs has {lines} lines; docs/policies.md promises under 150");
}
