use serde_json::json;

use super::mask_json;

#[test]
fn secret_named_arguments_and_known_values_are_masked_everywhere_in_the_tree() {
    let args = json!({
        "repo": "ops/infra",
        "password": "hunter2",
        "nested": {"api_key": {"v": 1}, "list": [{"Authorization": "Bearer abc"}, "held ghp-known here"]},
        "count": 3,
        "token": null,
    });
    let masked = mask_json(&args, &["ghp-known".to_string()], true);
    let text = masked.to_string();
    for secret in ["hunter2", "Bearer abc", "ghp-known"] {
        assert!(!text.contains(secret), "{secret} in {text}");
    }
    assert_eq!(masked["repo"], "ops/infra");
    assert_eq!(masked["count"], 3);
    assert_eq!(masked["nested"]["api_key"], "***");
    assert_eq!(masked["token"], serde_json::Value::Null);
    // Without names, only the known values go.
    let by_value = mask_json(&args, &["ghp-known".to_string()], false);
    assert_eq!(by_value["password"], "hunter2");
    assert_eq!(by_value["nested"]["list"][1], "held *** here");
}
