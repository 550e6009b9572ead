use std::sync::{Arc, Mutex};

use cel::Value;

use super::*;
use crate::cel::{PER_CALL_LIMIT, compile};

/// Allows `get` of anything in namespace `team` and `get` of `/healthz`; remembers every check.
#[derive(Default)]
struct Recorder {
    asked: Mutex<Vec<(Principal, Check, String)>>,
}

impl Authorize for Recorder {
    fn authorize(&self, principal: &Principal, check: &Check, verb: &str) -> Verdict {
        if let Ok(mut asked) = self.asked.lock() {
            asked.push((principal.clone(), check.clone(), verb.to_owned()));
        }
        let allowed = verb == "get"
            && match check {
                Check::Resource(r) => r.namespace == "team",
                Check::Path(p) => p == "/healthz",
            };
        Verdict {
            allowed,
            reason: if allowed { "granted" } else { "" }.to_owned(),
            error: None,
        }
    }
}

/// The check of the request's own resource: a scale of Deployment `web` in `team`.
fn request() -> ResourceCheck {
    ResourceCheck {
        group: "apps".to_owned(),
        resource: "deployments".to_owned(),
        subresource: "scale".to_owned(),
        namespace: "team".to_owned(),
        name: "web".to_owned(),
        ..ResourceCheck::default()
    }
}

fn run(recorder: &Arc<Recorder>, source: &str) -> (Result<Value, String>, u64) {
    let program = match compile(source, &["authorizer"]) {
        Ok(program) => program,
        Err(e) => return (Err(e.0), 0),
    };
    let authorize: Arc<dyn Authorize> = recorder.clone();
    let evaluated = program.evaluate(
        &[
            ("authorizer", authorizer(Arc::clone(&authorize))),
            (
                "authorizer.requestResource",
                request_resource(authorize, request()),
            ),
        ],
        PER_CALL_LIMIT,
    );
    (
        evaluated.result.map_err(|e| format!("{e:?}")),
        evaluated.cost,
    )
}

#[test]
fn resource_checks_carry_what_the_builders_set() {
    let recorder = Arc::new(Recorder::default());
    let (result, _) = run(
        &recorder,
        "authorizer.group('apps').resource('deployments').subresource('status')\
         .namespace('team').name('web').check('get').allowed()",
    );
    assert_eq!(result, Ok(Value::Bool(true)));
    let asked = recorder.asked.lock().map(|a| a.clone()).unwrap_or_default();
    assert_eq!(
        asked,
        [(
            Principal::Requester,
            Check::Resource(ResourceCheck {
                group: "apps".to_owned(),
                resource: "deployments".to_owned(),
                subresource: "status".to_owned(),
                namespace: "team".to_owned(),
                name: "web".to_owned(),
                ..ResourceCheck::default()
            }),
            "get".to_owned()
        )]
    );
    let (refused, _) = run(
        &recorder,
        "authorizer.group('').resource('pods').namespace('other').check('get').allowed()",
    );
    assert_eq!(refused, Ok(Value::Bool(false)));
}

#[test]
fn decisions_answer_their_accessors() {
    let recorder = Arc::new(Recorder::default());
    let decision = "authorizer.path('/healthz').check('get')";
    for (source, want) in [
        (format!("{decision}.reason()"), Value::from("granted")),
        (format!("{decision}.errored()"), Value::Bool(false)),
        (format!("{decision}.error()"), Value::from("")),
        (
            "authorizer.path('/metrics').check('get').allowed()".to_owned(),
            Value::Bool(false),
        ),
    ] {
        assert_eq!(run(&recorder, &source).0, Ok(want), "{source}");
    }
}

#[test]
fn the_request_resource_and_service_accounts() {
    let recorder = Arc::new(Recorder::default());
    let (result, _) = run(
        &recorder,
        "authorizer.requestResource.check('get').allowed()",
    );
    assert_eq!(result, Ok(Value::Bool(true)));
    let (result, _) = run(
        &recorder,
        "authorizer.serviceAccount('team', 'builder').group('').resource('secrets')\
         .namespace('team').labelSelector('app=web').check('list').allowed()",
    );
    assert_eq!(result, Ok(Value::Bool(false)));
    let asked = recorder.asked.lock().map(|a| a.clone()).unwrap_or_default();
    assert_eq!(asked.len(), 2);
    assert_eq!(asked[0].1, Check::Resource(request()));
    assert_eq!(
        asked[1].0,
        Principal::ServiceAccount {
            namespace: "team".to_owned(),
            name: "builder".to_owned()
        }
    );
    let Check::Resource(check) = &asked[1].1 else {
        panic!("a resource check was expected: {asked:?}");
    };
    assert_eq!(check.label_selector, "app=web");
}

/// Upstream's errors (`authz.go`: `authorizerPath`, `groupCheckResource`,
/// `authorizerServiceAccount`).
#[test]
fn bad_arguments_are_errors() {
    let recorder = Arc::new(Recorder::default());
    for (source, error) in [
        (
            "authorizer.path(' ').check('get')",
            "path must not be empty",
        ),
        (
            "authorizer.group('').resource('').check('get')",
            "resource must not be empty",
        ),
        (
            "authorizer.serviceAccount('team', 'Bad_Name').path('/x').check('get')",
            "Invalid service account name",
        ),
        (
            "authorizer.serviceAccount('a.b', 'ok').path('/x').check('get')",
            "Invalid service account namespace",
        ),
    ] {
        let (result, _) = run(&recorder, source);
        let message = result.expect_err(source);
        assert!(message.contains(error), "{source}: {message}");
    }
    assert!(recorder.asked.lock().map(|a| a.is_empty()).unwrap_or(false));
}

/// Upstream's `CallCost`: a check is 350,000, so two fit in `PerCallLimit` and three do not.
#[test]
fn checks_are_expensive() {
    let recorder = Arc::new(Recorder::default());
    let check = "authorizer.path('/healthz').check('get').allowed()";
    let (two, cost) = run(&recorder, &format!("{check} && {check}"));
    assert_eq!(two, Ok(Value::Bool(true)));
    assert!((700_000..700_100).contains(&cost), "{cost}");
    let (three, _) = run(&recorder, &format!("{check} && {check} && {check}"));
    assert_eq!(three, Err("CostLimit".to_owned()));
}
