// Upstream: policy/validating/dispatcher.go (the refusal) and policy_decision.go
// (reasonToCode).

use super::*;

#[test]
fn refusal_codes_follow_the_reason() {
    assert_eq!(reason_code("Forbidden"), 403);
    assert_eq!(reason_code("Invalid"), 422);
    assert_eq!(reason_code("RequestEntityTooLarge"), 413);
    assert_eq!(reason_code("Unauthorized"), 401);
    assert_eq!(reason_code("Other"), 422);
}
