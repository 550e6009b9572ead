//! A RoleBinding's or ClusterRoleBinding's USERS, GROUPS and SERVICEACCOUNTS
//! (`printRoleBinding`, `printClusterRoleBinding` of `pkg/printers/internalversion/printers.go`,
//! with `rbac.SubjectsStrings`).

use serde_json::Value;

use crate::printer::format::{self, array_at, str_at};

/// The subjects of `kind`, as `SubjectsStrings` writes them, joined by `, `.
fn subjects(binding: &Value, kind: &str) -> Value {
    let names: Vec<String> = array_at(binding, ".subjects")
        .iter()
        .filter(|s| str_at(s, ".kind") == kind)
        .map(|s| match kind {
            "ServiceAccount" => format::namespaced_name(s),
            _ => str_at(s, ".name").to_owned(),
        })
        .collect();
    Value::from(names.join(", "))
}

/// USERS: the names of the User subjects.
pub(crate) fn binding_users(binding: &Value) -> Value {
    subjects(binding, "User")
}

/// GROUPS: the names of the Group subjects.
pub(crate) fn binding_groups(binding: &Value) -> Value {
    subjects(binding, "Group")
}

/// SERVICEACCOUNTS: `namespace/name` of the ServiceAccount subjects.
pub(crate) fn binding_service_accounts(binding: &Value) -> Value {
    subjects(binding, "ServiceAccount")
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn subjects_by_kind() {
        let binding = json!({"subjects": [
            {"kind": "User", "name": "alice"}, {"kind": "User", "name": "bob"},
            {"kind": "Group", "name": "devs"},
            {"kind": "ServiceAccount", "namespace": "ci", "name": "builder"},
            {"kind": "Robot", "name": "r2"}]});
        assert_eq!(binding_users(&binding), json!("alice, bob"));
        assert_eq!(binding_groups(&binding), json!("devs"));
        assert_eq!(binding_service_accounts(&binding), json!("ci/builder"));
        assert_eq!(binding_users(&json!({})), json!(""));
    }
}
