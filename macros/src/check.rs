//! Rules that span several keys or fields, defaults, and the naming rules upstream applies to
//! every served kind. The result is a [`Model`] that [`crate::expand`] turns into tokens without
//! further checks.
//!
//! Names follow the rules kube-apiserver applies to CRD names (apiextensions validation), since a
//! derived kind is served the same way: a name that upstream would reject here fails to compile
//! rather than at registration.

use proc_macro2::Span;
use syn::spanned::Spanned as _;
use syn::{Ident, Path, Visibility};

use crate::ast::{Field, Input};
use crate::attr::{self, Attrs, Key, Scope, Spanned};
use crate::errors::Errors;

/// A checked kind, every default filled in.
pub(crate) struct Model<'a> {
    pub(crate) ident: &'a Ident,
    pub(crate) vis: &'a Visibility,
    pub(crate) krate: Path,
    pub(crate) group: String,
    pub(crate) version: String,
    pub(crate) kind: String,
    pub(crate) plural: String,
    pub(crate) singular: String,
    pub(crate) scope: Scope,
    pub(crate) short_names: Vec<String>,
    pub(crate) categories: Vec<String>,
    pub(crate) selectable_fields: Vec<String>,
    /// Sorted in discovery's order, whatever order they were written in.
    pub(crate) verbs: Vec<&'static str>,
    pub(crate) status: bool,
    pub(crate) scale: Option<Scale>,
    pub(crate) printer_columns: Vec<Column>,
    pub(crate) defaults: Vec<DefaultStep>,
    /// `kapi::write_rules::Generation` and `StatusOnCreate` variants, and the release.
    pub(crate) generation: Option<Ident>,
    pub(crate) generation_since: Option<(u16, u16)>,
    pub(crate) status_on_create: Option<Ident>,
    /// `Some`: a built-in's status strategy keeping these metadata fields; `None`: only the
    /// status changes, as a custom resource's.
    pub(crate) status_keeps_metadata: Option<Vec<String>>,
    pub(crate) field_labels: FieldLabels,
    /// The `kapi::write_rules::WriteConversion` variant.
    pub(crate) write_conversion: Option<Ident>,
    /// Whether a PUT of a missing object creates it.
    pub(crate) create_on_update: bool,
    /// The `kapi::write_rules::CreateRule` variant.
    pub(crate) create_rule: Option<Ident>,
    pub(crate) introduced: Option<(u16, u16)>,
    pub(crate) deprecated: Option<(u16, u16)>,
    pub(crate) removed: Option<(u16, u16)>,
    pub(crate) replacement: Option<[String; 3]>,
    pub(crate) warning: Option<String>,
    pub(crate) merge: Option<Path>,
    /// `family = path`: the built-in family the kind's version belongs to.
    pub(crate) family: Option<Path>,
    pub(crate) list: bool,
    /// `kube`: k8s-openapi's `Resource`, `Metadata` and `ListableResource` too, the list alias
    /// k8s-openapi's `List`.
    pub(crate) kube: bool,
    pub(crate) api_version_field: &'a Field<'a>,
    pub(crate) kind_field: &'a Field<'a>,
    pub(crate) metadata_field: &'a Field<'a>,
}

/// `kapi::field_labels::FieldLabels`.
pub(crate) enum FieldLabels {
    Custom,
    Meta,
    Listed {
        labels: Vec<FieldLabel>,
        message: String,
    },
}

/// One `kapi::field_labels::FieldLabel`.
pub(crate) struct FieldLabel {
    pub(crate) label: String,
    pub(crate) paths: Vec<String>,
    /// The `kapi::field_labels::FieldType` variant.
    pub(crate) type_: Ident,
    pub(crate) since: Option<(u16, u16)>,
    pub(crate) until: Option<(u16, u16)>,
}

pub(crate) struct Scale {
    pub(crate) spec_replicas_path: String,
    pub(crate) status_replicas_path: String,
    pub(crate) label_selector_path: Option<String>,
}

pub(crate) struct Column {
    pub(crate) name: String,
    pub(crate) type_: String,
    pub(crate) cell: Cell,
    pub(crate) priority: i32,
    pub(crate) format: Option<String>,
    pub(crate) description: Option<String>,
    pub(crate) since: Option<(u16, u16)>,
    pub(crate) until: Option<(u16, u16)>,
}

/// One `default(...)`, checked.
pub(crate) struct DefaultStep {
    pub(crate) path: String,
    pub(crate) fill: Fill,
    /// The sibling field and the JSON text it must equal.
    pub(crate) when: Option<(String, String)>,
    pub(crate) since: Option<(u16, u16)>,
    pub(crate) until: Option<(u16, u16)>,
}

/// What a default fills in.
pub(crate) enum Fill {
    /// JSON text, checked to parse.
    Json(String),
    /// The `kapi::defaulting::Rule` variant, spanned at the attribute.
    Rule(Ident),
}

/// How a column's cell is computed.
pub(crate) enum Cell {
    /// `json_path = ".spec.x"`.
    Path(String),
    /// `cell = "rule(.a, .b)"`: the rule's `kapi::printer::Rule` variant (spanned at the
    /// attribute, so an unknown rule is reported there by rustc) and its paths.
    Rule {
        variant: Ident,
        name: String,
        paths: Vec<String>,
    },
}

/// The kapi crate as generated code reaches it unless `crate = "..."` says otherwise.
pub(crate) fn default_crate() -> Path {
    syn::parse_quote!(::kapi)
}

/// Applies every rule, reporting each violation; `None` when something needed is missing.
pub(crate) fn resolve<'a>(
    input: &'a Input<'a>,
    attrs: Attrs,
    errors: &mut Errors,
) -> Option<Model<'a>> {
    let krate = attrs.krate.clone().unwrap_or_else(default_crate);
    let anchor = attrs.first.unwrap_or_else(|| input.ident.span());

    // A kind has exactly one apiVersion and kind string, and `Resource` needs `'static` and
    // `DeserializeOwned`; a type parameter or lifetime can only break one of those.
    if let Some(param) = input.generics.params.first() {
        errors.at(
            param.span(),
            "#[derive(Resource)] does not support generic parameters or lifetimes: a kind has \
             one fixed `apiVersion` and `kind`; write a concrete struct for each kind",
        );
    }

    let fields = find_fields(input, &krate, errors);
    let names = resolve_names(input, &attrs, anchor, errors);

    // Serving `/status` splits writes between the object and its status, which means nothing
    // for a kind whose objects carry no status.
    if let Some(span) = attrs.status
        && input.fields.is_some()
        && input.field("status").is_none()
    {
        errors.at(
            span,
            "#[resource(status)] needs a `status` field to serve: add one, \
             e.g. `pub status: Option<MyStatus>`, or remove `status`",
        );
    }

    let scale = attrs
        .scale
        .as_ref()
        .and_then(|scale| resolve_scale(scale, errors));
    let printer_columns = attrs
        .printer_columns
        .iter()
        .filter_map(|column| resolve_column(column, errors))
        .collect::<Vec<_>>();
    let defaults = attrs
        .defaults
        .iter()
        .filter_map(|default| resolve_default(default, errors))
        .collect::<Vec<_>>();
    let selectable_fields = distinct(&attrs.selectable_fields, attr::SELECTABLE_FIELDS, errors)
        .into_iter()
        .filter(|path| json_path(path, Key::top(attr::SELECTABLE_FIELDS), true, errors))
        .map(|path| path.value.clone())
        .collect();
    let verbs = resolve_verbs(&attrs, errors);
    let replacement = resolve_lifecycle(&attrs, errors);
    let field_labels = resolve_field_labels(&attrs, errors);

    let (fields, names) = (fields?, names?);
    Some(Model {
        ident: input.ident,
        vis: input.vis,
        krate,
        group: names.group,
        version: names.version,
        kind: names.kind,
        plural: names.plural,
        singular: names.singular,
        scope: attrs.scope.map_or(Scope::Namespaced, |scope| scope.value),
        short_names: names.short_names,
        categories: names.categories,
        selectable_fields,
        verbs,
        status: attrs.status.is_some(),
        scale,
        printer_columns,
        defaults,
        generation: attrs
            .generation
            .as_ref()
            .map(|g| Ident::new(&upper_camel(&g.value), g.span)),
        generation_since: attrs.generation_since.as_ref().map(|v| v.value),
        status_on_create: attrs
            .status_on_create
            .as_ref()
            .map(|s| Ident::new(&upper_camel(&s.value), s.span)),
        status_keeps_metadata: attrs
            .status_keeps_metadata
            .as_ref()
            .map(|keeps| keeps.iter().map(|k| k.value.clone()).collect()),
        field_labels,
        write_conversion: attrs
            .write_conversion
            .as_ref()
            .map(|w| Ident::new(&upper_camel(&w.value), w.span)),
        create_on_update: attrs.create_on_update.unwrap_or(false),
        create_rule: attrs
            .create_rule
            .as_ref()
            .map(|r| Ident::new(&upper_camel(&r.value), r.span)),
        introduced: attrs.introduced.map(|v| v.value),
        deprecated: attrs.deprecated.map(|v| v.value),
        removed: attrs.removed.map(|v| v.value),
        replacement,
        warning: attrs.deprecation_warning.map(|w| w.value),
        merge: attrs.merge.clone(),
        family: attrs.family.clone(),
        list: attrs.no_list.is_none(),
        kube: attrs.kube.is_some(),
        api_version_field: fields.0,
        kind_field: fields.1,
        metadata_field: fields.2,
    })
}

/// The `apiVersion`, `kind` and `metadata` fields, found by the name serde gives them.
fn find_fields<'a>(
    input: &'a Input<'a>,
    krate: &Path,
    errors: &mut Errors,
) -> Option<(&'a Field<'a>, &'a Field<'a>, &'a Field<'a>)> {
    // Not a struct with named fields: `ast` has said so, and listing three missing fields on
    // top would bury that.
    input.fields.as_ref()?;
    let krate = display_path(krate);
    let wanted = [
        (
            "apiVersion",
            "api_version",
            format!(
                "#[serde(rename = \"apiVersion\")] pub api_version: {krate}::type_tag::ApiVersion<Self>,"
            ),
        ),
        (
            "kind",
            "kind",
            format!("pub kind: {krate}::type_tag::Kind<Self>,"),
        ),
        (
            "metadata",
            "metadata",
            format!("#[serde(default)] pub metadata: {krate}::meta::ObjectMeta,"),
        ),
    ];
    let mut found = Vec::with_capacity(3);
    for (wire, rust, declaration) in wanted {
        if let Some(field) = input.field(wire) {
            found.push(field);
            continue;
        }
        // The usual slip is the right Rust name without the serde rename; point at it.
        match input.field_by_ident(rust) {
            Some(field) => errors.at(
                field.ident.span(),
                format_args!(
                    "field `{rust}` is written to JSON as \"{}\", but a kind's field must be \
                     \"{wire}\": add #[serde(rename = \"{wire}\")] to it",
                    field.wire_name
                ),
            ),
            None => errors.at(
                input.ident.span(),
                format_args!(
                    "#[derive(Resource)] needs a field serialized as \"{wire}\": \
                     add `{declaration}`"
                ),
            ),
        }
    }
    match found[..] {
        [api_version, kind, metadata] => Some((api_version, kind, metadata)),
        _ => None,
    }
}

/// Group, version, kind and the names derived from them.
struct Names {
    group: String,
    version: String,
    kind: String,
    plural: String,
    singular: String,
    short_names: Vec<String>,
    categories: Vec<String>,
}

fn resolve_names(
    input: &Input<'_>,
    attrs: &Attrs,
    anchor: Span,
    errors: &mut Errors,
) -> Option<Names> {
    let has_group = attrs.seen.contains_key(attr::GROUP);
    let has_version = attrs.seen.contains_key(attr::VERSION);
    if attrs.malformed {
        // The syntax error is reported; keys after it were never read.
    } else if attrs.first.is_none() {
        errors.at(
            anchor,
            "#[derive(Resource)] needs #[resource(group = \"...\", version = \"...\")] \
             on the struct; use `group = \"\"` for the core group",
        );
    } else {
        if !has_group {
            errors.at(
                anchor,
                "#[resource(...)] is missing `group`: add `group = \"...\"`, \
                 or `group = \"\"` for the core group",
            );
        }
        if !has_version {
            errors.at(
                anchor,
                "#[resource(...)] is missing `version`: add e.g. `version = \"v1\"`",
            );
        }
    }

    // Both are part of every URL and apiVersion, and upstream rejects anything else there.
    let group = attrs.group.as_ref().filter(|group| {
        group.value.is_empty()
            || valid(
                dns1123_subdomain(&group.value),
                group,
                Key::top(attr::GROUP),
                "\"apps\"",
                false,
                errors,
            )
    });
    let version = attrs.version.as_ref().filter(|v| {
        valid(
            dns1035_label(&v.value),
            v,
            Key::top(attr::VERSION),
            "\"v1\"",
            false,
            errors,
        )
    });

    let kind = match &attrs.kind {
        Some(kind) => Some(kind.clone()),
        None if attrs.seen.contains_key(attr::KIND) => None,
        None => Some(Spanned {
            value: input.ident.unraw_string(),
            span: input.ident.span(),
        }),
    };
    // Upstream requires the lowercased kind to be a DNS-1035 label; it becomes the singular.
    let kind = kind.filter(|kind| {
        let ok = dns1035_label(&kind.value.to_ascii_lowercase());
        if !ok {
            errors.at(
                kind.span,
                format_args!(
                    "kind \"{}\" is not valid: it must be {KIND}, \
                     e.g. #[resource(kind = \"Widget\")]",
                    kind.value
                ),
            );
        }
        ok
    });

    let lower = kind.as_ref().map(|kind| kind.value.to_ascii_lowercase());
    let plural = name_or_default(
        &attrs.plural,
        attr::PLURAL,
        lower.as_deref().map(guess_plural),
        &kind,
        errors,
    );
    let singular = name_or_default(
        &attrs.singular,
        attr::SINGULAR,
        lower.clone(),
        &kind,
        errors,
    );

    let labels = |list: &[Spanned<String>], key: &'static str, errors: &mut Errors| {
        distinct(list, key, errors)
            .into_iter()
            .filter(|name| {
                valid(
                    dns1035_label(&name.value),
                    name,
                    Key::top(key),
                    "\"abc\"",
                    true,
                    errors,
                )
            })
            .map(|name| name.value.clone())
            .collect::<Vec<_>>()
    };
    let short_names = labels(&attrs.short_names, attr::SHORT_NAMES, errors);
    let categories = labels(&attrs.categories, attr::CATEGORIES, errors);

    Some(Names {
        group: group?.value.clone(),
        version: version?.value.clone(),
        kind: kind?.value,
        plural: plural?,
        singular: singular?,
        short_names,
        categories,
    })
}

/// `plural` or `singular` as written, else the default derived from the kind; either must be a
/// DNS-1035 label because it is a URL path segment.
fn name_or_default(
    written: &Option<Spanned<String>>,
    key: &'static str,
    default: Option<String>,
    kind: &Option<Spanned<String>>,
    errors: &mut Errors,
) -> Option<String> {
    if let Some(name) = written {
        let example = if key == attr::PLURAL {
            "\"widgets\""
        } else {
            "\"widget\""
        };
        return valid(
            dns1035_label(&name.value),
            name,
            Key::top(key),
            example,
            false,
            errors,
        )
        .then(|| name.value.clone());
    }
    let (default, kind) = (default?, kind.as_ref()?);
    if dns1035_label(&default) {
        return Some(default);
    }
    // Only length can fail here, since the kind itself passed; say which key fixes it.
    errors.at(
        kind.span,
        format_args!(
            "the {key} \"{default}\" derived from kind \"{}\" is longer than 63 characters: \
             set a shorter one with #[resource({key} = \"...\")]",
            kind.value
        ),
    );
    None
}

/// Upstream's guess of a resource name from a lowercase kind (apimachinery's
/// `UnsafeGuessKindToResource`), where that guess is an English plural.
///
/// Upstream leaves `endpoints` alone, adds `es` after `s` and turns `y` into `ies`. It also
/// turns a `y` after a vowel into `ies` and adds a bare `s` after `x`, `z`, `ch` and `sh`
/// (`gatewaies`, `boxs`); every real API spells those the English way (Gateway API serves
/// `gateways`), and kubebuilder's generator does too, so this follows English there.
pub(crate) fn guess_plural(lower: &str) -> String {
    // Upstream's list of kinds whose singular and plural are the same word.
    const UNPLURALIZED_SUFFIXES: &[&str] = &["endpoints"];
    if UNPLURALIZED_SUFFIXES
        .iter()
        .any(|suffix| lower.ends_with(suffix))
    {
        return lower.to_owned();
    }
    if let Some(stem) = lower.strip_suffix('y')
        && !stem.ends_with(['a', 'e', 'i', 'o', 'u'])
    {
        return format!("{stem}ies");
    }
    if lower.ends_with(['s', 'x', 'z']) || lower.ends_with("ch") || lower.ends_with("sh") {
        return format!("{lower}es");
    }
    format!("{lower}s")
}

fn resolve_verbs(attrs: &Attrs, errors: &mut Errors) -> Vec<&'static str> {
    let Some(written) = &attrs.verbs else {
        return attr::VERB_NAMES.to_vec();
    };
    // A kind that serves no verb is not served at all; the likely intent is the default.
    if written.value.is_empty() {
        errors.at(
            written.span,
            "#[resource(verbs = [])] serves nothing: list the verbs to serve, \
             or remove `verbs` to serve all eight",
        );
    }
    let mut verbs = Vec::new();
    for verb in distinct(&written.value, attr::VERBS, errors) {
        match attr::VERB_NAMES.iter().find(|known| **known == verb.value) {
            Some(known) => verbs.push(*known),
            None => errors.at(
                verb.span,
                format_args!(
                    "#[resource(verbs = [...])]: \"{}\" is not a verb; use any of: {}",
                    verb.value,
                    attr::VERB_NAMES.join(", ")
                ),
            ),
        }
    }
    verbs.sort_unstable();
    verbs
}

fn resolve_scale(scale: &attr::ScaleAttr, errors: &mut Errors) -> Option<Scale> {
    // Upstream confines each path to the part of the object that owns it: desired replicas are
    // spec, observed replicas are status, and the selector may be either.
    let under =
        |path: &Spanned<String>, key: &'static str, prefixes: &[&str], errors: &mut Errors| {
            let ok = prefixes.iter().any(|prefix| {
                path.value.len() > prefix.len() + 1 && path.value.starts_with(&format!("{prefix}."))
            });
            if !ok {
                let key = Key::inside(attr::SCALE, key);
                let example = match key.name {
                    attr::SPEC_REPLICAS_PATH => "\".spec.replicas\"",
                    attr::STATUS_REPLICAS_PATH => "\".status.replicas\"",
                    _ => "\".status.labelSelector\"",
                };
                errors.at(
                    path.span,
                    format_args!(
                        "{} must be a JSON path under `{}`, e.g. {}",
                        key.with(&format!("{:?}", path.value)),
                        prefixes.join("` or `"),
                        key.with(example)
                    ),
                );
            }
            ok
        };
    let spec = scale.spec_replicas_path.as_ref();
    let status = scale.status_replicas_path.as_ref();
    let spec_ok = spec.is_some_and(|p| under(p, attr::SPEC_REPLICAS_PATH, &[".spec"], errors));
    let status_ok =
        status.is_some_and(|p| under(p, attr::STATUS_REPLICAS_PATH, &[".status"], errors));
    let selector_ok = scale
        .label_selector_path
        .as_ref()
        .is_none_or(|p| under(p, attr::LABEL_SELECTOR_PATH, &[".status", ".spec"], errors));
    if !(spec_ok && status_ok && selector_ok) {
        return None;
    }
    Some(Scale {
        spec_replicas_path: spec?.value.clone(),
        status_replicas_path: status?.value.clone(),
        label_selector_path: scale.label_selector_path.as_ref().map(|p| p.value.clone()),
    })
}

fn resolve_column(column: &attr::ColumnAttr, errors: &mut Errors) -> Option<Column> {
    for key in [attr::NAME, attr::TYPE] {
        if !column.seen.contains(&key) {
            errors.at(
                column.span,
                format_args!(
                    "#[resource(printer_column(...))] is missing `{key}`; a column needs at \
                     least `name = \"...\", type = \"string\", json_path = \".spec.x\"`"
                ),
            );
        }
    }
    match (
        column.seen.contains(&attr::JSON_PATH),
        column.seen.contains(&attr::CELL),
    ) {
        (false, false) => errors.at(
            column.span,
            "#[resource(printer_column(...))] needs what its cell shows: `json_path = \".spec.x\"` \
             or a printer rule, `cell = \"ratio(.status.readyReplicas, .spec.replicas)\"`",
        ),
        (true, true) => errors.at(
            column.span,
            "#[resource(printer_column(...))] takes `json_path` or `cell`, not both",
        ),
        _ => {}
    }
    if column.format.as_deref() == Some("name") && column.seen.contains(&attr::JSON_PATH) {
        errors.at(
            column.span,
            "#[resource(printer_column(format = \"name\"))] is for a printer rule's column naming \
             the row (`cell = \"name\"`); a `json_path` column takes a CRD's formats",
        );
    }
    if let (Some(since), Some(until)) = (&column.since, &column.until)
        && until.value <= since.value
    {
        errors.at(
            until.span,
            "#[resource(printer_column(until = ...))] must be a later release than `since`",
        );
        return None;
    }
    if let Some(name) = column.name.as_ref().filter(|name| name.value.is_empty()) {
        errors.at(
            name.span,
            "#[resource(printer_column(name = \"\"))]: a column needs a header; \
             write e.g. `name = \"Replicas\"`",
        );
        return None;
    }
    let cell = match (&column.json_path, &column.cell) {
        (Some(json_path), None) => {
            let key = Key::inside(attr::PRINTER_COLUMN, attr::JSON_PATH);
            if !self::json_path(json_path, key, false, errors) {
                return None;
            }
            Cell::Path(json_path.value.clone())
        }
        (None, Some(cell)) => parse_cell(cell, errors)?,
        _ => return None,
    };
    Some(Column {
        name: column.name.as_ref()?.value.clone(),
        type_: column.type_.as_ref()?.value.clone(),
        cell,
        priority: column.priority.unwrap_or(0),
        format: column.format.clone(),
        description: column.description.clone(),
        since: column.since.as_ref().map(|v| v.value),
        until: column.until.as_ref().map(|v| v.value),
    })
}

/// `field_label(...)` entries and `field_label_message`, or `field_labels = "custom" | "meta"`.
fn resolve_field_labels(attrs: &Attrs, errors: &mut Errors) -> FieldLabels {
    if let Some(set) = &attrs.field_label_set {
        if !attrs.field_labels.is_empty() || attrs.field_label_message.is_some() {
            errors.at(
                set.span,
                "#[resource(field_labels = ...)] names a kind's whole set of field labels: \
                 write it or `field_label(...)` entries, not both",
            );
        }
        return match set.value.as_str() {
            "meta" => FieldLabels::Meta,
            _ => FieldLabels::Custom,
        };
    }
    if attrs.field_labels.is_empty() && attrs.field_label_message.is_none() {
        return FieldLabels::Custom;
    }
    let labels = attrs
        .field_labels
        .iter()
        .filter_map(|field| {
            let label = field.label.as_ref()?;
            let key = Key::inside(attr::FIELD_LABEL, attr::PATHS);
            let paths = match &field.paths {
                Some(paths) => paths.clone(),
                None => vec![Spanned {
                    value: format!(".{}", label.value),
                    span: label.span,
                }],
            };
            let ok = paths.iter().all(|path| json_path(path, key, true, errors));
            let type_ = field.type_.as_ref().map_or("string", |t| t.value.as_str());
            ok.then(|| FieldLabel {
                label: label.value.clone(),
                paths: paths.into_iter().map(|p| p.value).collect(),
                type_: Ident::new(&upper_camel(type_), label.span),
                since: field.since.as_ref().map(|v| v.value),
                until: field.until.as_ref().map(|v| v.value),
            })
        })
        .collect();
    FieldLabels::Listed {
        labels,
        message: attrs.field_label_message.as_ref().map_or_else(
            || "field label not supported: %s".to_owned(),
            |m| m.value.clone(),
        ),
    }
}

fn resolve_default(default: &attr::DefaultAttr, errors: &mut Errors) -> Option<DefaultStep> {
    let Some(path) = &default.path else {
        errors.at(
            default.span,
            "#[resource(default(...))] is missing `path`; write e.g. \
             `default(path = \".spec.replicas\", value = \"1\")`",
        );
        return None;
    };
    let key = Key::inside(attr::DEFAULT, attr::PATH);
    // `[*]` goes through every item of a list; the field itself is a plain name.
    let plain = Spanned {
        value: path.value.replace("[*]", ""),
        span: path.span,
    };
    if !json_path(&plain, key, false, errors) {
        return None;
    }
    let fill = match (&default.value, &default.rule) {
        (Some(value), None) => {
            if let Err(e) = serde_json::from_str::<serde_json::Value>(&value.value) {
                errors.at(
                    value.span,
                    format_args!(
                        "#[resource(default(value = {:?}))] is not JSON ({e}): write a JSON \
                         value, e.g. value = \"1\" or value = \"\\\"RollingUpdate\\\"\"",
                        value.value
                    ),
                );
                return None;
            }
            Fill::Json(value.value.clone())
        }
        (None, Some(rule)) => Fill::Rule(Ident::new(&upper_camel(&rule.value), rule.span)),
        _ => {
            errors.at(
                default.span,
                "#[resource(default(...))] takes a JSON `value` or a `rule`, one of them",
            );
            return None;
        }
    };
    let when = match &default.when {
        None => None,
        Some(when) => {
            let parsed = when.value.split_once("==").and_then(|(field, equals)| {
                let (field, equals) = (field.trim(), equals.trim());
                let is_name = !field.is_empty()
                    && field.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
                (is_name && serde_json::from_str::<serde_json::Value>(equals).is_ok())
                    .then(|| (field.to_owned(), equals.to_owned()))
            });
            if parsed.is_none() {
                errors.at(
                    when.span,
                    format_args!(
                        "#[resource(default(when = {:?}))] is not a condition: write \
                         `field == <JSON>` on a sibling of the field, e.g. \
                         when = \"type == \\\"RollingUpdate\\\"\"",
                        when.value
                    ),
                );
                return None;
            }
            parsed
        }
    };
    Some(DefaultStep {
        path: path.value.clone(),
        fill,
        when,
        since: default.since.as_ref().map(|v| v.value),
        until: default.until.as_ref().map(|v| v.value),
    })
}

/// `image_pull_policy` → `ImagePullPolicy`: a rule's enum variant.
fn upper_camel(snake: &str) -> String {
    snake
        .split('_')
        .map(|word| {
            let mut chars = word.chars();
            chars
                .next()
                .map(|first| first.to_ascii_uppercase().to_string() + chars.as_str())
                .unwrap_or_default()
        })
        .collect()
}

/// `rule(.path, ...)`, or `rule` alone: a snake-case rule name and simple JSON paths.
fn parse_cell(cell: &Spanned<String>, errors: &mut Errors) -> Option<Cell> {
    let key = Key::inside(attr::PRINTER_COLUMN, attr::CELL);
    let text = cell.value.trim();
    let (name, args) = match text.split_once('(') {
        Some((name, rest)) => match rest.strip_suffix(')') {
            Some(args) => (name.trim(), args),
            None => ("", ""),
        },
        None => (text, ""),
    };
    let is_rule_name = name.starts_with(|c: char| c.is_ascii_lowercase())
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
    if !is_rule_name {
        errors.at(
            cell.span,
            format_args!(
                "{} is not a printer rule: write `rule(.path, ...)` with a rule of \
                 `kapi::printer::Rule` in snake case, e.g. {}",
                key.with(&format!("{:?}", cell.value)),
                key.with("\"ratio(.status.readyReplicas, .spec.replicas)\"")
            ),
        );
        return None;
    }
    let mut paths = Vec::new();
    for arg in args.split(',').map(str::trim).filter(|a| !a.is_empty()) {
        let path = Spanned {
            value: arg.to_owned(),
            span: cell.span,
        };
        if !json_path(&path, key, false, errors) {
            return None;
        }
        paths.push(path.value);
    }
    Some(Cell::Rule {
        variant: Ident::new(&upper_camel(name), cell.span),
        name: name.to_owned(),
        paths,
    })
}

/// Checks the lifecycle keys against each other and returns the replacement kind.
fn resolve_lifecycle(attrs: &Attrs, errors: &mut Errors) -> Option<[String; 3]> {
    let introduced = attrs.introduced.as_ref();
    let deprecated = attrs.deprecated.as_ref();
    let removed = attrs.removed.as_ref();
    let show = |(major, minor): (u16, u16)| format!("{major}.{minor}");

    // A kind cannot be deprecated before it exists, nor removed before it was deprecated: the
    // server compares these with its own version to decide whether to warn or stop serving.
    if let (Some(introduced), Some(deprecated)) = (introduced, deprecated)
        && deprecated.value < introduced.value
    {
        errors.at(
            deprecated.span,
            format_args!(
                "#[resource(deprecated = \"{}\")] is before introduced = \"{}\": \
                 a kind is deprecated in or after the release that introduced it",
                show(deprecated.value),
                show(introduced.value)
            ),
        );
    }
    if let Some(removed) = removed {
        match deprecated {
            // Upstream's policy removes only what was deprecated first, so users were warned.
            None if !attrs.seen.contains_key(attr::DEPRECATED) => errors.at(
                removed.span,
                format_args!(
                    "#[resource(removed = \"{}\")] needs `deprecated`: a kind is deprecated \
                     before it is removed; add e.g. `deprecated = \"1.16\"`",
                    show(removed.value)
                ),
            ),
            Some(deprecated) if removed.value <= deprecated.value => errors.at(
                removed.span,
                format_args!(
                    "#[resource(removed = \"{}\")] must come after deprecated = \"{}\"",
                    show(removed.value),
                    show(deprecated.value)
                ),
            ),
            _ => {}
        }
    }
    // A replacement only ever appears in the computed warning, so without `deprecated` it would
    // be silently unused. A `deprecation_warning` on its own is how a CRD marks a version
    // deprecated (CRDs say *that* a version is deprecated, never since which release).
    if !attrs.seen.contains_key(attr::DEPRECATED) {
        for key in [attr::REPLACEMENT] {
            if let Some(span) = attrs.seen.get(key) {
                errors.at(
                    *span,
                    format_args!(
                        "#[resource({key})] only applies to a deprecated kind: \
                         add e.g. `deprecated = \"1.16\"`"
                    ),
                );
            }
        }
    }

    let replacement = attrs.replacement.as_ref()?;
    for key in [attr::GROUP, attr::VERSION, attr::KIND] {
        if !replacement.seen.contains(&key) {
            errors.at(
                replacement.span,
                format_args!(
                    "#[resource(replacement(...))] is missing `{key}`; write \
                     `replacement(group = \"...\", version = \"...\", kind = \"...\")`"
                ),
            );
        }
    }
    let group = replacement.group.as_ref().filter(|group| {
        group.value.is_empty()
            || valid(
                dns1123_subdomain(&group.value),
                group,
                Key::inside(attr::REPLACEMENT, attr::GROUP),
                "\"apps\"",
                false,
                errors,
            )
    })?;
    let version = replacement.version.as_ref().filter(|v| {
        valid(
            dns1035_label(&v.value),
            v,
            Key::inside(attr::REPLACEMENT, attr::VERSION),
            "\"v1\"",
            false,
            errors,
        )
    })?;
    let kind = replacement.kind.as_ref().filter(|kind| {
        valid(
            dns1035_label(&kind.value.to_ascii_lowercase()),
            kind,
            Key::inside(attr::REPLACEMENT, attr::KIND),
            "\"Widget\"",
            false,
            errors,
        )
    })?;
    Some([
        group.value.clone(),
        version.value.clone(),
        kind.value.clone(),
    ])
}

/// Reports repeated entries of a list key and returns the first of each.
fn distinct<'s>(
    list: &'s [Spanned<String>],
    key: &str,
    errors: &mut Errors,
) -> Vec<&'s Spanned<String>> {
    let mut out: Vec<&Spanned<String>> = Vec::with_capacity(list.len());
    for item in list {
        if out.iter().any(|seen| seen.value == item.value) {
            errors.at(
                item.span,
                format_args!(
                    "#[resource({key} = [...])] lists \"{}\" twice; remove one",
                    item.value
                ),
            );
        } else {
            out.push(item);
        }
    }
    out
}

/// Upstream accepts only simple JSON paths, which always start at the object with a `.`.
fn json_path(path: &Spanned<String>, key: Key, in_list: bool, errors: &mut Errors) -> bool {
    let ok = path.value.len() > 1 && path.value.starts_with('.');
    if !ok {
        let written = format!("{:?}", path.value);
        let written = if in_list {
            format!("[{written}]")
        } else {
            written
        };
        errors.at(
            path.span,
            format_args!(
                "{} is not a simple JSON path: start it with `.`, e.g. \".spec.replicas\"",
                key.with(&written)
            ),
        );
    }
    ok
}

/// Naming rules upstream applies, as messages state them.
const LABEL: &str = "a lowercase DNS label: letters, digits and '-', starting with a letter, \
                     at most 63 characters";
const SUBDOMAIN: &str = "lowercase DNS labels (letters, digits and '-') joined by '.'";
const KIND: &str = "a CamelCase name of ASCII letters and digits, starting with a letter";

/// Reports `value` of `key` when `ok` is false; `in_list` quotes it as a list entry.
fn valid(
    ok: bool,
    value: &Spanned<String>,
    key: Key,
    example: &str,
    in_list: bool,
    errors: &mut Errors,
) -> bool {
    if !ok {
        let rule = match key.name {
            attr::GROUP => SUBDOMAIN,
            attr::KIND => KIND,
            _ => LABEL,
        };
        let wrap = |text: &str| {
            if in_list {
                format!("[{text}]")
            } else {
                text.to_owned()
            }
        };
        errors.at(
            value.span,
            format_args!(
                "{} is not valid: it must be {rule}, e.g. {}",
                key.with(&wrap(&format!("{:?}", value.value))),
                key.with(&wrap(example))
            ),
        );
    }
    ok
}

/// RFC 1035 label as upstream checks it: `[a-z]([-a-z0-9]*[a-z0-9])?`, at most 63 bytes.
pub(crate) fn dns1035_label(s: &str) -> bool {
    let bytes = s.as_bytes();
    matches!(bytes.first(), Some(b'a'..=b'z'))
        && bytes.len() <= 63
        && bytes.last() != Some(&b'-')
        && bytes
            .iter()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || *b == b'-')
}

/// RFC 1123 subdomain as upstream checks it: dot-separated labels of `[a-z0-9]` and inner `-`,
/// at most 253 bytes.
pub(crate) fn dns1123_subdomain(s: &str) -> bool {
    s.len() <= 253
        && s.split('.').all(|label| {
            let bytes = label.as_bytes();
            !bytes.is_empty()
                && bytes.first() != Some(&b'-')
                && bytes.last() != Some(&b'-')
                && bytes
                    .iter()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || *b == b'-')
        })
}

/// How a path is written in Rust source, for messages that show a declaration to copy.
fn display_path(path: &Path) -> String {
    let segments = path
        .segments
        .iter()
        .map(|segment| segment.ident.to_string())
        .collect::<Vec<_>>()
        .join("::");
    // `::kapi` reads as plain `kapi` in a field declaration; a custom path is shown as written.
    if path.leading_colon.is_some() && segments != "kapi" {
        format!("::{segments}")
    } else {
        segments
    }
}

trait UnrawString {
    fn unraw_string(&self) -> String;
}

impl UnrawString for Ident {
    fn unraw_string(&self) -> String {
        syn::ext::IdentExt::unraw(self).to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plural_guesses() {
        let cases = [
            // Upstream's rules.
            ("pod", "pods"),
            ("deployment", "deployments"),
            ("ingress", "ingresses"),
            ("componentstatus", "componentstatuses"),
            ("policy", "policies"),
            ("networkpolicy", "networkpolicies"),
            ("endpoints", "endpoints"),
            ("myendpoints", "myendpoints"),
            ("endpointslice", "endpointslices"),
            // Where upstream's guess is not English.
            ("gateway", "gateways"),
            ("key", "keys"),
            ("box", "boxes"),
            ("waltz", "waltzes"),
            ("patch", "patches"),
            ("mesh", "meshes"),
            ("y", "ies"),
        ];
        for (kind, want) in cases {
            assert_eq!(guess_plural(kind), want, "{kind}");
        }
    }

    #[test]
    fn dns_names() {
        let labels = [
            ("v1", true),
            ("v1beta1", true),
            ("a-b", true),
            ("", false),
            ("1a", false),
            ("a-", false),
            ("A", false),
            ("a.b", false),
            (&"a".repeat(63), true),
            (&"a".repeat(64), false),
        ];
        for (s, want) in labels {
            assert_eq!(dns1035_label(s), want, "{s:?}");
        }
        let subdomains = [
            ("apps", true),
            ("networking.k8s.io", true),
            ("1x.example.com", true),
            ("", false),
            ("a..b", false),
            (".a", false),
            ("a-.b", false),
            ("Apps", false),
            ("a_b", false),
        ];
        for (s, want) in subdomains {
            assert_eq!(dns1123_subdomain(s), want, "{s:?}");
        }
    }

    #[test]
    fn crate_paths_display_as_written() {
        assert_eq!(display_path(&default_crate()), "kapi");
        assert_eq!(display_path(&syn::parse_quote!(::my::kapi)), "::my::kapi");
        assert_eq!(display_path(&syn::parse_quote!(kapi)), "kapi");
    }
}
