//! The templates shipped with merlya: the repository's `templates/` folder compiled into the binary
//! (`include_str!`), so a copied binary renders them with no file beside it. A test checks that this
//! list and the folder hold the same files.

use std::collections::BTreeMap;

use super::load::{SCHEMA_FILE, Source, Template, TemplateError, load};

/// Every file of every built-in template, by path under `templates/` (`FOLDER/FILE`).
pub const FILES: &[(&str, &str)] = &[
    ("basic-vm/template.yaml", include_str!("../../../templates/basic-vm/template.yaml")),
    ("basic-vm/main.tf.j2", include_str!("../../../templates/basic-vm/main.tf.j2")),
    ("basic-vm/providers/aws.tf.j2", include_str!("../../../templates/basic-vm/providers/aws.tf.j2")),
    ("basic-vm/providers/azure.tf.j2", include_str!("../../../templates/basic-vm/providers/azure.tf.j2")),
    ("basic-vm/providers/gcp.tf.j2", include_str!("../../../templates/basic-vm/providers/gcp.tf.j2")),
    ("basic-vm/providers/proxmox.tf.j2", include_str!("../../../templates/basic-vm/providers/proxmox.tf.j2")),
    ("data-marker/template.yaml", include_str!("../../../templates/data-marker/template.yaml")),
    ("data-marker/main.tf.j2", include_str!("../../../templates/data-marker/main.tf.j2")),
    ("data-pair/template.yaml", include_str!("../../../templates/data-pair/template.yaml")),
    ("data-pair/main.tf.j2", include_str!("../../../templates/data-pair/main.tf.j2")),
    ("file-marker/template.yaml", include_str!("../../../templates/file-marker/template.yaml")),
    ("file-marker/request.json.j2", include_str!("../../../templates/file-marker/request.json.j2")),
];

/// The built-in templates, loaded and checked like a user's (an error here is a bug in merlya,
/// caught by the tests).
pub fn templates() -> Vec<Result<Template, TemplateError>> {
    let mut folders: BTreeMap<&str, (Option<&str>, BTreeMap<String, String>)> = BTreeMap::new();
    for (path, text) in FILES {
        let Some((folder, file)) = path.split_once('/') else { continue };
        let (schema, files) = folders.entry(folder).or_default();
        if file == SCHEMA_FILE {
            *schema = Some(text);
        } else {
            files.insert(file.to_string(), text.to_string());
        }
    }
    folders
        .into_iter()
        .map(|(folder, (schema, files))| match schema {
            Some(schema) => load(Source::BuiltIn, folder, schema, files),
            None => Err(TemplateError::Unreadable {
                file: Source::BuiltIn.file_name(folder, SCHEMA_FILE),
                message: "missing".into(),
            }),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;

    fn files_under(root: &Path, dir: &Path, out: &mut Vec<String>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                files_under(root, &path, out);
            } else {
                out.push(path.strip_prefix(root).unwrap().to_string_lossy().into_owned());
            }
        }
    }

    #[test]
    fn every_file_of_the_templates_folder_is_compiled_in() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("templates");
        let mut on_disk = Vec::new();
        files_under(&root, &root, &mut on_disk);
        on_disk.retain(|f| f != "README.md");
        on_disk.sort();
        let mut listed: Vec<String> = FILES.iter().map(|(p, _)| p.to_string()).collect();
        listed.sort();
        assert_eq!(listed, on_disk, "templates/ and builtin::FILES differ: add the file to FILES");
    }

    #[test]
    fn every_built_in_template_loads() {
        let loaded = templates();
        let names: Vec<String> =
            loaded.iter().map(|t| t.as_ref().map(|t| t.spec.key()).unwrap_or_else(|e| e.to_string())).collect();
        assert_eq!(names, ["basic-vm:1.0.0", "data-marker:1.0.0", "data-pair:1.0.0", "file-marker:1.0.0"]);
    }
}
