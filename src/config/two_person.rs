//! `policy.two_person_approval_for` as the configuration reads it (ADR 0033): what asks for a
//! second person, checked when the file is loaded (the approval gate applies it).

use crate::store::pipelines::Kind;

/// The longest a change may wait for its second person (a day): `two_person_expiry_minutes` is
/// refused above it.
pub const MAX_EXPIRY_MINUTES: u32 = 24 * 60;

/// What asks for a second person.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Needs {
    /// A target host carries this tag.
    Tag(String),
    /// A change of this pipeline kind.
    Kind(Kind),
}

impl Needs {
    /// Reads `policy.two_person_approval_for`; an entry that is neither `@tag` nor a kind is named.
    pub fn parse_list(entries: &[String]) -> Result<Vec<Needs>, String> {
        entries
            .iter()
            .map(|entry| match entry.strip_prefix('@') {
                Some(tag) if !tag.is_empty() && !tag.contains(char::is_whitespace) => Ok(Needs::Tag(tag.to_string())),
                Some(_) => Err(format!("`{entry}`: a tag needs a name after @")),
                None => Kind::parse(entry).map(Needs::Kind).ok_or_else(|| {
                    format!("`{entry}`: expected @TAG or a pipeline kind (bash, ansible, terraform, kubernetes, mcp)")
                }),
            })
            .collect()
    }

    /// How the policy spells it (`@prod`, `terraform`).
    pub fn shown(&self) -> String {
        match self {
            Needs::Tag(tag) => format!("@{tag}"),
            Needs::Kind(kind) => kind.as_str().to_string(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_policy_list_takes_tags_and_kinds_and_names_a_bad_entry() {
        let needs = Needs::parse_list(&["@prod".into(), "terraform".into()]).unwrap();
        assert_eq!(needs, [Needs::Tag("prod".into()), Needs::Kind(Kind::Terraform)]);
        assert!(Needs::parse_list(&["@".into()]).unwrap_err().contains("`@`"));
        let e = Needs::parse_list(&["prod".into()]).unwrap_err();
        assert!(e.contains("`prod`") && e.contains("@TAG"), "{e}");
    }
}
