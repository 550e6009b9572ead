//! `kapi-cel-steps`: what the ten CEL rules of `kapi-cel-load`'s Widget cost one object, in a
//! loop without a server (issue 19): the whole walk of the CRD's compiled rules, the object's
//! conversion to CEL values, and each rule alone. Each figure is the mean over `--iterations`
//! runs; a busy machine moves these less than the request rates of `kapi-cel-load`.

#![allow(
    clippy::unwrap_used,
    reason = "a benchmark: a failed unwrap is a failed run"
)]

#[path = "../timing.rs"]
mod timing;
#[path = "../widget.rs"]
mod widget;

use std::hint::black_box;

use anyhow::{Context, Result, bail};
use clap::Parser;
use kapi::cel::validation::Validator;
use kapi::cel::{Activation, PER_CALL_LIMIT, compile_on, value};
use kapi::schema::JSONSchemaProps;
use serde_json::Value;

use crate::timing::time;
use crate::widget::{RULES, body, crd};

// The allocator the `kapi` server ships with (runtime/server/src/main.rs).
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

/// Options of one run.
#[derive(Debug, Parser)]
#[command(about = "The ten CEL rules of one Widget, whole and rule by rule")]
struct Args {
    /// Runs of each step.
    #[arg(long, default_value_t = 20_000)]
    iterations: u32,
}

fn main() -> Result<()> {
    let args = Args::parse();
    let n = args.iterations.max(1);
    let schema: JSONSchemaProps = serde_json::from_value(
        crd(true)["spec"]["versions"][0]["schema"]["openAPIV3Schema"].clone(),
    )?;
    let spec_schema = schema.properties.get("spec").context("no spec schema")?;
    let validator = Validator::new(&schema).context("the schema has no rules")?;
    let object: Value = serde_json::from_slice(&body("widget"))?;
    let spec = &object["spec"];
    let causes = validator.validate(&object, None, false);
    if !causes.is_empty() {
        bail!("the Widget fails its rules: {causes:?}");
    }

    let whole = time(n, || {
        black_box(validator.validate(black_box(&object), None, false));
    });
    let conversion = time(n, || {
        black_box(value::to_val(Some(spec_schema), black_box(spec), false));
    });
    let binding = time(n, || {
        black_box(Activation::of_vals(vec![(
            "self",
            value::to_val(Some(spec_schema), black_box(spec), false),
        )]));
    });
    println!("| one Widget, ten rules | µs |");
    println!("|---|---:|");
    println!("| the walk of the CRD's rules (all ten) | {whole:.2} |");
    println!("| the spec made the CEL crate's values | {conversion:.2} |");
    println!("| those bound as `self` (with the conversion) | {binding:.2} |");
    for (rule, _) in RULES {
        let program = compile_on(rule, spec_schema, false).map_err(|e| anyhow::anyhow!("{e}"))?;
        // Bound once, as the walk binds a node's variables once for all its rules.
        let activation = Activation::of_vals(vec![(
            "self",
            value::to_val(Some(spec_schema), spec, false),
        )]);
        let alone = time(n, || {
            black_box(program.evaluate_in(&activation, PER_CALL_LIMIT));
        });
        println!("| `{rule}` | {alone:.2} |");
    }
    Ok(())
}
