//! The README's quick start is a contract: its first command runs kapi's main job and its second
//! is exactly what CI runs. These tests run what a newcomer would type.

use std::process::Command;

use kapi_e2e::{readme_quick_start, workspace_root};

#[test]
fn ci_runs_the_readme_test_command() {
    let (_, test_command) = readme_quick_start().unwrap();
    let ci = std::fs::read_to_string(workspace_root().join(".ci/run")).unwrap();
    let ci_commands: Vec<&str> = ci
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .collect();
    assert!(
        ci_commands.contains(&test_command.as_str()),
        ".ci/run must run the README's test command {test_command:?}; it runs {ci_commands:?}"
    );
}

#[test]
fn readme_main_command_lists_the_example_api() {
    let (run_command, _) = readme_quick_start().unwrap();
    let output = Command::new("bash")
        .arg("-c")
        .arg(&run_command)
        .current_dir(workspace_root())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{run_command:?} failed: {}\n{stdout}",
        String::from_utf8_lossy(&output.stderr)
    );
    for expected in [
        "widgets.kapi.dev/v1",
        "Widget",
        "widgets",
        "Gizmo",
        "v1beta1",
    ] {
        assert!(
            stdout.contains(expected),
            "{run_command:?} printed no {expected:?}:\n{stdout}"
        );
    }
}
