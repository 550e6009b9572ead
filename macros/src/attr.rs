//! The `#[resource(...)]` vocabulary: key names, the shape of each value, and checks that need
//! only the value itself (a verb is known, a version reads `MAJOR.MINOR`, a name is a DNS label).
//!
//! Parsing never stops at the first mistake: a bad value is reported and parsing moves on to the
//! next key, so one compile lists every mistake. Which keys go together is [`crate::check`]'s
//! business.

use std::collections::HashMap;

use proc_macro2::Span;
use syn::meta::ParseNestedMeta;
use syn::spanned::Spanned as _;
use syn::{Attribute, Expr, ExprLit, Lit, LitInt, LitStr, Path};

use crate::errors::Errors;

/// The attribute this derive reads.
pub(crate) const RESOURCE: &str = "resource";

pub(crate) const GROUP: &str = "group";
pub(crate) const VERSION: &str = "version";
pub(crate) const KIND: &str = "kind";
pub(crate) const PLURAL: &str = "plural";
pub(crate) const SINGULAR: &str = "singular";
pub(crate) const NAMESPACED: &str = "namespaced";
pub(crate) const CLUSTER: &str = "cluster";
pub(crate) const SHORT_NAMES: &str = "short_names";
pub(crate) const CATEGORIES: &str = "categories";
pub(crate) const SELECTABLE_FIELDS: &str = "selectable_fields";
pub(crate) const VERBS: &str = "verbs";
pub(crate) const STATUS: &str = "status";
pub(crate) const SCALE: &str = "scale";
pub(crate) const PRINTER_COLUMN: &str = "printer_column";
pub(crate) const DEFAULT: &str = "default";
pub(crate) const GENERATION: &str = "generation";
pub(crate) const GENERATION_SINCE: &str = "generation_since";
pub(crate) const STATUS_ON_CREATE: &str = "status_on_create";
pub(crate) const STATUS_KEEPS_METADATA: &str = "status_keeps_metadata";
pub(crate) const WRITE_CONVERSION: &str = "write_conversion";
pub(crate) const CREATE_ON_UPDATE: &str = "create_on_update";
pub(crate) const CREATE_RULE: &str = "create_rule";
pub(crate) const FIELD_LABEL: &str = "field_label";
pub(crate) const FIELD_LABEL_MESSAGE: &str = "field_label_message";
pub(crate) const FIELD_LABELS: &str = "field_labels";
pub(crate) const INTRODUCED: &str = "introduced";
pub(crate) const DEPRECATED: &str = "deprecated";
pub(crate) const REMOVED: &str = "removed";
pub(crate) const REPLACEMENT: &str = "replacement";
pub(crate) const DEPRECATION_WARNING: &str = "deprecation_warning";
pub(crate) const MERGE: &str = "merge";
pub(crate) const FAMILY: &str = "family";
pub(crate) const CRATE: &str = "crate";
pub(crate) const NO_LIST: &str = "no_list";
pub(crate) const KUBE: &str = "kube";
pub(crate) const SERVED: &str = "served";
pub(crate) const STORAGE: &str = "storage";
pub(crate) const DERIVE: &str = "derive";

/// Every top-level key, in the order error messages list them.
const KEYS: &[&str] = &[
    GROUP,
    VERSION,
    KIND,
    PLURAL,
    SINGULAR,
    NAMESPACED,
    CLUSTER,
    SHORT_NAMES,
    CATEGORIES,
    SELECTABLE_FIELDS,
    VERBS,
    STATUS,
    SCALE,
    PRINTER_COLUMN,
    DEFAULT,
    GENERATION,
    GENERATION_SINCE,
    STATUS_ON_CREATE,
    STATUS_KEEPS_METADATA,
    WRITE_CONVERSION,
    CREATE_ON_UPDATE,
    CREATE_RULE,
    FIELD_LABEL,
    FIELD_LABEL_MESSAGE,
    FIELD_LABELS,
    INTRODUCED,
    DEPRECATED,
    REMOVED,
    REPLACEMENT,
    DEPRECATION_WARNING,
    MERGE,
    FAMILY,
    CRATE,
    NO_LIST,
    KUBE,
];

/// `#[derive(CustomResource)]` reads the same keys plus these.
const CUSTOM_RESOURCE_KEYS: &[&str] = &[
    GROUP,
    VERSION,
    KIND,
    PLURAL,
    SINGULAR,
    NAMESPACED,
    CLUSTER,
    SHORT_NAMES,
    CATEGORIES,
    SELECTABLE_FIELDS,
    VERBS,
    STATUS,
    SCALE,
    PRINTER_COLUMN,
    INTRODUCED,
    DEPRECATED,
    REMOVED,
    REPLACEMENT,
    DEPRECATION_WARNING,
    MERGE,
    CRATE,
    NO_LIST,
    KUBE,
    SERVED,
    STORAGE,
    DERIVE,
];

/// Which derive reads the attributes; `CustomResource` gives some keys another form.
#[derive(Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum Derive {
    #[default]
    Resource,
    CustomResource,
}

pub(crate) const SPEC_REPLICAS_PATH: &str = "spec_replicas_path";
pub(crate) const STATUS_REPLICAS_PATH: &str = "status_replicas_path";
pub(crate) const LABEL_SELECTOR_PATH: &str = "label_selector_path";
const SCALE_KEYS: &[&str] = &[
    SPEC_REPLICAS_PATH,
    STATUS_REPLICAS_PATH,
    LABEL_SELECTOR_PATH,
];

pub(crate) const NAME: &str = "name";
pub(crate) const TYPE: &str = "type";
pub(crate) const JSON_PATH: &str = "json_path";
pub(crate) const PRIORITY: &str = "priority";
pub(crate) const FORMAT: &str = "format";
pub(crate) const DESCRIPTION: &str = "description";
pub(crate) const CELL: &str = "cell";
pub(crate) const SINCE: &str = "since";
pub(crate) const UNTIL: &str = "until";
const COLUMN_KEYS: &[&str] = &[
    NAME,
    TYPE,
    JSON_PATH,
    CELL,
    PRIORITY,
    FORMAT,
    DESCRIPTION,
    SINCE,
    UNTIL,
];

pub(crate) const PATH: &str = "path";
pub(crate) const VALUE: &str = "value";
pub(crate) const RULE: &str = "rule";
pub(crate) const WHEN: &str = "when";
const DEFAULT_KEYS: &[&str] = &[PATH, VALUE, RULE, WHEN, SINCE, UNTIL];

pub(crate) const LABEL: &str = "label";
pub(crate) const PATHS: &str = "paths";
const FIELD_LABEL_KEYS: &[&str] = &[LABEL, PATHS, TYPE, SINCE, UNTIL];

/// `field_label(type = "...")`: the variants of `kapi::field_labels::FieldType`.
pub(crate) const FIELD_TYPES: &[&str] = &["string", "boolean", "integer"];

/// `field_labels = "..."`: the field label conversions a kind without `field_label` entries
/// follows, `kapi::field_labels::FieldLabels::{Custom, Meta}`.
pub(crate) const FIELD_LABEL_SETS: &[&str] = &["custom", "meta"];

const REPLACEMENT_KEYS: &[&str] = &[GROUP, VERSION, KIND];

/// The verbs a kind may serve, in discovery's (alphabetical) order.
pub(crate) const VERB_NAMES: &[&str] = &[
    "create",
    "delete",
    "deletecollection",
    "get",
    "list",
    "patch",
    "update",
    "watch",
];

/// `generation = "..."`: the variants of `kapi::write_rules::Generation`, in snake case.
pub(crate) const GENERATIONS: &[&str] = &[
    "none",
    "spec",
    "spec_and_annotations",
    "spec_and_labels",
    "create_only",
];

/// `status_on_create = "..."`: the variants of `kapi::write_rules::StatusOnCreate`.
pub(crate) const STATUS_ON_CREATE_VALUES: &[&str] = &["keep", "remove", "empty", "pod_pending"];

/// `write_conversion = "..."`: the variants of `kapi::write_rules::WriteConversion`.
pub(crate) const WRITE_CONVERSIONS: &[&str] = &["none", "secret_string_data"];

/// `create_rule = "..."`: the variants of `kapi::write_rules::CreateRule`.
pub(crate) const CREATE_RULES: &[&str] = &["none", "job_selector", "pod_label_keys"];

/// Printer column types upstream accepts (apiextensions' `printerColumnDatatypes`).
const COLUMN_TYPES: &[&str] = &["integer", "number", "string", "boolean", "date"];

/// Printer column formats upstream accepts (apiextensions' column definition formats).
const COLUMN_FORMATS: &[&str] = &[
    "int32",
    "int64",
    "float",
    "double",
    "byte",
    "date",
    "date-time",
    "password",
];

/// Table formats of the built-ins' columns beyond a CRD's: none (`""`), and `name`, the column
/// naming the row, which only a printer rule's column may claim (checked with the cell).
const TABLE_FORMATS: &[&str] = &["", "name"];

/// A value with the span of the tokens it came from, for error messages.
#[derive(Clone)]
pub(crate) struct Spanned<T> {
    pub(crate) value: T,
    pub(crate) span: Span,
}

/// A key as messages quote it: top-level, or inside `scale(...)`, `printer_column(...)` or
/// `replacement(...)`.
#[derive(Clone, Copy)]
pub(crate) struct Key {
    pub(crate) outer: Option<&'static str>,
    pub(crate) name: &'static str,
}

impl Key {
    pub(crate) const fn top(name: &'static str) -> Self {
        Key { outer: None, name }
    }

    pub(crate) const fn inside(outer: &'static str, name: &'static str) -> Self {
        Key {
            outer: Some(outer),
            name,
        }
    }

    /// `#[resource(inner)]`, or `#[resource(outer(inner))]` for a nested key.
    pub(crate) fn quote(self, inner: &str) -> String {
        match self.outer {
            Some(outer) => format!("#[resource({outer}({inner}))]"),
            None => format!("#[resource({inner})]"),
        }
    }

    /// The key written with `value`, e.g. `#[resource(scale(spec_replicas_path = "x"))]`.
    pub(crate) fn with(self, value: &str) -> String {
        self.quote(&format!("{} = {value}", self.name))
    }
}

/// `namespaced` or `cluster`.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Scope {
    Namespaced,
    Cluster,
}

/// `scale(...)`.
pub(crate) struct ScaleAttr {
    pub(crate) span: Span,
    pub(crate) spec_replicas_path: Option<Spanned<String>>,
    pub(crate) status_replicas_path: Option<Spanned<String>>,
    pub(crate) label_selector_path: Option<Spanned<String>>,
}

/// One `printer_column(...)`.
pub(crate) struct ColumnAttr {
    pub(crate) span: Span,
    pub(crate) name: Option<Spanned<String>>,
    pub(crate) type_: Option<Spanned<String>>,
    pub(crate) json_path: Option<Spanned<String>>,
    /// `cell = "rule(.path, ...)"`: a printer rule instead of a path.
    pub(crate) cell: Option<Spanned<String>>,
    pub(crate) priority: Option<i32>,
    pub(crate) format: Option<String>,
    pub(crate) description: Option<String>,
    /// The releases that show the column: from `since`, until (without) `until`.
    pub(crate) since: Option<Spanned<(u16, u16)>>,
    pub(crate) until: Option<Spanned<(u16, u16)>>,
    /// Sub-keys written, so a bad value is not also reported as missing.
    pub(crate) seen: Vec<&'static str>,
}

/// One `default(...)`.
pub(crate) struct DefaultAttr {
    pub(crate) span: Span,
    pub(crate) path: Option<Spanned<String>>,
    /// The JSON text to fill in.
    pub(crate) value: Option<Spanned<String>>,
    /// A `kapi::defaulting::Rule` in snake case instead of a value.
    pub(crate) rule: Option<Spanned<String>>,
    /// `field == <JSON>`: a condition on a sibling of the defaulted field.
    pub(crate) when: Option<Spanned<String>>,
    pub(crate) since: Option<Spanned<(u16, u16)>>,
    pub(crate) until: Option<Spanned<(u16, u16)>>,
    pub(crate) seen: Vec<&'static str>,
}

/// One `field_label(...)`.
pub(crate) struct FieldLabelAttr {
    pub(crate) span: Span,
    pub(crate) label: Option<Spanned<String>>,
    /// `None`: the label's own path.
    pub(crate) paths: Option<Vec<Spanned<String>>>,
    pub(crate) type_: Option<Spanned<String>>,
    pub(crate) since: Option<Spanned<(u16, u16)>>,
    pub(crate) until: Option<Spanned<(u16, u16)>>,
}

/// `replacement(...)`.
pub(crate) struct ReplacementAttr {
    pub(crate) span: Span,
    pub(crate) group: Option<Spanned<String>>,
    pub(crate) version: Option<Spanned<String>>,
    pub(crate) kind: Option<Spanned<String>>,
    pub(crate) seen: Vec<&'static str>,
}

/// Everything written in the struct's `#[resource(...)]` attributes.
#[derive(Default)]
pub(crate) struct Attrs {
    /// The first `#[resource]` attribute, where errors about missing keys point.
    pub(crate) first: Option<Span>,
    /// Whether an attribute was cut short by a syntax error, so keys after it went unread and
    /// must not be reported as missing.
    pub(crate) malformed: bool,
    /// Each key written, with where; a key whose value was bad is still here, so it is not also
    /// reported as missing.
    pub(crate) seen: HashMap<&'static str, Span>,
    pub(crate) group: Option<Spanned<String>>,
    pub(crate) version: Option<Spanned<String>>,
    pub(crate) kind: Option<Spanned<String>>,
    pub(crate) plural: Option<Spanned<String>>,
    pub(crate) singular: Option<Spanned<String>>,
    pub(crate) scope: Option<Spanned<Scope>>,
    pub(crate) short_names: Vec<Spanned<String>>,
    pub(crate) categories: Vec<Spanned<String>>,
    pub(crate) selectable_fields: Vec<Spanned<String>>,
    pub(crate) verbs: Option<Spanned<Vec<Spanned<String>>>>,
    pub(crate) status: Option<Span>,
    pub(crate) scale: Option<ScaleAttr>,
    pub(crate) printer_columns: Vec<ColumnAttr>,
    pub(crate) defaults: Vec<DefaultAttr>,
    pub(crate) generation: Option<Spanned<String>>,
    pub(crate) generation_since: Option<Spanned<(u16, u16)>>,
    pub(crate) status_on_create: Option<Spanned<String>>,
    pub(crate) status_keeps_metadata: Option<Vec<Spanned<String>>>,
    pub(crate) write_conversion: Option<Spanned<String>>,
    pub(crate) create_on_update: Option<bool>,
    pub(crate) create_rule: Option<Spanned<String>>,
    pub(crate) field_labels: Vec<FieldLabelAttr>,
    pub(crate) field_label_message: Option<Spanned<String>>,
    pub(crate) field_label_set: Option<Spanned<String>>,
    pub(crate) introduced: Option<Spanned<(u16, u16)>>,
    pub(crate) deprecated: Option<Spanned<(u16, u16)>>,
    pub(crate) removed: Option<Spanned<(u16, u16)>>,
    pub(crate) replacement: Option<ReplacementAttr>,
    pub(crate) deprecation_warning: Option<Spanned<String>>,
    pub(crate) merge: Option<Path>,
    pub(crate) family: Option<Path>,
    pub(crate) krate: Option<Path>,
    pub(crate) no_list: Option<Span>,
    /// `kube`: also implement k8s-openapi's traits, so the `kube` crate takes the kind.
    pub(crate) kube: Option<Span>,
    /// Which derive these belong to.
    pub(crate) derive: Derive,
    /// `status = "WidgetStatus"` (CustomResource): the status type.
    pub(crate) status_type: Option<syn::Type>,
    /// `deprecated` written as a flag (CustomResource): the CRD version's `deprecated: true`.
    pub(crate) deprecated_flag: Option<Span>,
    /// `served = false` (CustomResource).
    pub(crate) served: Option<bool>,
    /// `storage = false` (CustomResource).
    pub(crate) storage: Option<bool>,
    /// `derive = ["PartialEq"]` (CustomResource): extra derives on the kind struct.
    pub(crate) derives: Vec<Path>,
}

impl Attrs {
    /// Reads every `#[resource(...)]` among `attrs`.
    pub(crate) fn parse(attrs: &[Attribute], errors: &mut Errors) -> Self {
        Self::parse_for(attrs, Derive::Resource, errors)
    }

    /// Reads every `#[resource(...)]` among `attrs` with `derive`'s vocabulary.
    pub(crate) fn parse_for(attrs: &[Attribute], derive: Derive, errors: &mut Errors) -> Self {
        let mut out = Attrs {
            derive,
            ..Attrs::default()
        };
        for attr in attrs.iter().filter(|attr| attr.path().is_ident(RESOURCE)) {
            // The path, not the whole attribute: stable rustc cannot join spans, so an
            // attribute's span would underline only its `#`.
            out.first.get_or_insert(attr.path().span());
            if let Err(error) = attr.parse_nested_meta(|meta| out.parse_key(&meta, errors)) {
                errors.push(error);
                out.malformed = true;
            }
        }
        out
    }

    /// Reads one top-level key. Returning `Err` stops this attribute, so only malformed token
    /// structure does; a bad value is reported into `errors` and parsing goes on.
    fn parse_key(&mut self, meta: &ParseNestedMeta<'_>, errors: &mut Errors) -> syn::Result<()> {
        let keys = match self.derive {
            Derive::Resource => KEYS,
            Derive::CustomResource => CUSTOM_RESOURCE_KEYS,
        };
        let Some(key) = known_key(&meta.path, keys) else {
            errors.at(
                meta.path.span(),
                format_args!(
                    "unknown key `{}` in #[resource(...)]; expected one of: {}{}",
                    path_name(&meta.path),
                    keys.join(", "),
                    suggestion(&meta.path, keys)
                ),
            );
            return skip_value(meta);
        };
        if key != PRINTER_COLUMN
            && key != DEFAULT
            && key != FIELD_LABEL
            && self.seen.contains_key(key)
        {
            errors.at(
                meta.path.span(),
                format_args!(
                    "duplicate key `{key}` in #[resource(...)]: each key may be written once; \
                     remove this one"
                ),
            );
            return skip_value(meta);
        }
        // `namespaced` and `cluster` are one setting; a second one is a conflict, not a duplicate.
        if let (NAMESPACED | CLUSTER, Some(scope)) = (key, &self.scope) {
            let written = if scope.value == Scope::Namespaced {
                NAMESPACED
            } else {
                CLUSTER
            };
            errors.at(
                meta.path.span(),
                format_args!(
                    "#[resource({key})] conflicts with #[resource({written})]: \
                     a kind has one scope; keep one of them"
                ),
            );
            return skip_value(meta);
        }
        let span = meta.path.span();
        self.seen.insert(key, span);
        let top = Key::top(key);
        let scope = |value| Spanned { value, span };
        match key {
            GROUP => self.group = string(meta, top, errors)?,
            VERSION => self.version = string(meta, top, errors)?,
            KIND => self.kind = string(meta, top, errors)?,
            PLURAL => self.plural = string(meta, top, errors)?,
            SINGULAR => self.singular = string(meta, top, errors)?,
            NAMESPACED => self.scope = flag(meta, top, errors)?.map(|_| scope(Scope::Namespaced)),
            CLUSTER => self.scope = flag(meta, top, errors)?.map(|_| scope(Scope::Cluster)),
            SHORT_NAMES => self.short_names = string_list(meta, top, errors)?.unwrap_or_default(),
            CATEGORIES => self.categories = string_list(meta, top, errors)?.unwrap_or_default(),
            SELECTABLE_FIELDS => {
                self.selectable_fields = string_list(meta, top, errors)?.unwrap_or_default();
            }
            VERBS => {
                self.verbs = string_list(meta, top, errors)?.map(|value| Spanned { value, span });
            }
            STATUS if self.derive == Derive::CustomResource => {
                self.status_type = status_type(meta, errors)?;
                self.status = self.status_type.as_ref().map(|_| span);
            }
            STATUS => self.status = flag(meta, top, errors)?,
            DEPRECATED
                if self.derive == Derive::CustomResource && !meta.input.peek(syn::Token![=]) =>
            {
                self.deprecated_flag = flag(meta, top, errors)?;
            }
            SERVED => self.served = boolean(meta, top, errors)?,
            STORAGE => self.storage = boolean(meta, top, errors)?,
            DERIVE => {
                for name in string_list(meta, top, errors)?.unwrap_or_default() {
                    match LitStr::new(&name.value, name.span).parse::<Path>() {
                        Ok(path) => self.derives.push(path),
                        Err(_) => errors.at(
                            name.span,
                            format_args!(
                                "#[resource(derive = [...])]: {:?} is not a trait path",
                                name.value
                            ),
                        ),
                    }
                }
            }
            SCALE => self.scale = parse_scale(meta, errors)?,
            PRINTER_COLUMN => self.printer_columns.extend(parse_column(meta, errors)?),
            DEFAULT => self.defaults.extend(parse_default(meta, errors)?),
            GENERATION => {
                self.generation = one_of(string(meta, top, errors)?, top, GENERATIONS, errors);
            }
            GENERATION_SINCE => self.generation_since = kube_version(meta, top, errors)?,
            STATUS_ON_CREATE => {
                self.status_on_create = one_of(
                    string(meta, top, errors)?,
                    top,
                    STATUS_ON_CREATE_VALUES,
                    errors,
                );
            }
            STATUS_KEEPS_METADATA => self.status_keeps_metadata = string_list(meta, top, errors)?,
            WRITE_CONVERSION => {
                self.write_conversion =
                    one_of(string(meta, top, errors)?, top, WRITE_CONVERSIONS, errors);
            }
            CREATE_ON_UPDATE => self.create_on_update = boolean(meta, top, errors)?,
            CREATE_RULE => {
                self.create_rule = one_of(string(meta, top, errors)?, top, CREATE_RULES, errors);
            }
            FIELD_LABEL => self.field_labels.extend(parse_field_label(meta, errors)?),
            FIELD_LABEL_MESSAGE => self.field_label_message = string(meta, top, errors)?,
            FIELD_LABELS => {
                self.field_label_set =
                    one_of(string(meta, top, errors)?, top, FIELD_LABEL_SETS, errors);
            }
            INTRODUCED => self.introduced = kube_version(meta, top, errors)?,
            DEPRECATED => self.deprecated = kube_version(meta, top, errors)?,
            REMOVED => self.removed = kube_version(meta, top, errors)?,
            REPLACEMENT => self.replacement = parse_replacement(meta, errors)?,
            DEPRECATION_WARNING => self.deprecation_warning = string(meta, top, errors)?,
            MERGE => self.merge = static_path(meta, MERGE, "kapi::merge::TypeInfo", errors)?,
            FAMILY => {
                self.family = static_path(meta, FAMILY, "kapi::conversion::Family", errors)?;
            }
            CRATE => self.krate = crate_path(meta, errors)?,
            NO_LIST => self.no_list = flag(meta, top, errors)?,
            KUBE => self.kube = flag(meta, top, errors)?,
            _ => {}
        }
        Ok(())
    }
}

/// `scale(...)`, or `None` (reported) when it is not a list.
fn parse_scale(meta: &ParseNestedMeta<'_>, errors: &mut Errors) -> syn::Result<Option<ScaleAttr>> {
    let mut scale = ScaleAttr {
        span: meta.path.span(),
        spec_replicas_path: None,
        status_replicas_path: None,
        label_selector_path: None,
    };
    let mut seen = Vec::new();
    let parsed = nested(
        meta,
        SCALE,
        SCALE_KEYS,
        &mut seen,
        errors,
        |key, inner, errors| {
            let value = string(inner, key, errors)?;
            match key.name {
                SPEC_REPLICAS_PATH => scale.spec_replicas_path = value,
                STATUS_REPLICAS_PATH => scale.status_replicas_path = value,
                _ => scale.label_selector_path = value,
            }
            Ok(())
        },
    )?;
    if !parsed {
        return Ok(None);
    }
    for key in [SPEC_REPLICAS_PATH, STATUS_REPLICAS_PATH] {
        if !seen.contains(&key) {
            errors.at(
                scale.span,
                format_args!(
                    "#[resource(scale(...))] is missing `{key}`; \
                     write e.g. `scale(spec_replicas_path = \".spec.replicas\", \
                     status_replicas_path = \".status.replicas\")`"
                ),
            );
        }
    }
    Ok(Some(scale))
}

/// One `default(...)`, or `None` (reported) when it is not a list.
fn parse_default(
    meta: &ParseNestedMeta<'_>,
    errors: &mut Errors,
) -> syn::Result<Option<DefaultAttr>> {
    let mut default = DefaultAttr {
        span: meta.path.span(),
        path: None,
        value: None,
        rule: None,
        when: None,
        since: None,
        until: None,
        seen: Vec::new(),
    };
    let mut seen = Vec::new();
    let parsed = nested(
        meta,
        DEFAULT,
        DEFAULT_KEYS,
        &mut seen,
        errors,
        |key, inner, errors| {
            match key.name {
                PATH => default.path = string(inner, key, errors)?,
                VALUE => default.value = string(inner, key, errors)?,
                RULE => default.rule = string(inner, key, errors)?,
                WHEN => default.when = string(inner, key, errors)?,
                SINCE => default.since = kube_version(inner, key, errors)?,
                _ => default.until = kube_version(inner, key, errors)?,
            }
            Ok(())
        },
    )?;
    default.seen = seen;
    Ok(parsed.then_some(default))
}

/// One `field_label(...)`, or `None` (reported) when it is not a list.
fn parse_field_label(
    meta: &ParseNestedMeta<'_>,
    errors: &mut Errors,
) -> syn::Result<Option<FieldLabelAttr>> {
    let mut label = FieldLabelAttr {
        span: meta.path.span(),
        label: None,
        paths: None,
        type_: None,
        since: None,
        until: None,
    };
    let mut seen = Vec::new();
    let parsed = nested(
        meta,
        FIELD_LABEL,
        FIELD_LABEL_KEYS,
        &mut seen,
        errors,
        |key, inner, errors| {
            match key.name {
                LABEL => label.label = string(inner, key, errors)?,
                PATHS => label.paths = string_list(inner, key, errors)?,
                TYPE => label.type_ = one_of(string(inner, key, errors)?, key, FIELD_TYPES, errors),
                SINCE => label.since = kube_version(inner, key, errors)?,
                _ => label.until = kube_version(inner, key, errors)?,
            }
            Ok(())
        },
    )?;
    if parsed && label.label.is_none() {
        errors.at(
            label.span,
            "#[resource(field_label(...))] is missing `label`; write e.g. \
             `field_label(label = \"spec.nodeName\")`",
        );
        return Ok(None);
    }
    Ok(parsed.then_some(label))
}

/// One `printer_column(...)`, or `None` (reported) when it is not a list.
fn parse_column(
    meta: &ParseNestedMeta<'_>,
    errors: &mut Errors,
) -> syn::Result<Option<ColumnAttr>> {
    let mut column = ColumnAttr {
        span: meta.path.span(),
        name: None,
        type_: None,
        json_path: None,
        cell: None,
        priority: None,
        format: None,
        description: None,
        since: None,
        until: None,
        seen: Vec::new(),
    };
    let mut seen = Vec::new();
    let parsed = nested(
        meta,
        PRINTER_COLUMN,
        COLUMN_KEYS,
        &mut seen,
        errors,
        |key, inner, errors| {
            match key.name {
                NAME => column.name = string(inner, key, errors)?,
                TYPE => {
                    column.type_ = one_of(string(inner, key, errors)?, key, COLUMN_TYPES, errors)
                }
                JSON_PATH => column.json_path = string(inner, key, errors)?,
                CELL => column.cell = string(inner, key, errors)?,
                SINCE => column.since = kube_version(inner, key, errors)?,
                UNTIL => column.until = kube_version(inner, key, errors)?,
                PRIORITY => column.priority = int(inner, key, errors)?,
                FORMAT => {
                    column.format = match string(inner, key, errors)? {
                        Some(format) if TABLE_FORMATS.contains(&format.value.as_str()) => {
                            Some(format.value)
                        }
                        format => {
                            one_of(format, key, COLUMN_FORMATS, errors).map(|format| format.value)
                        }
                    };
                }
                _ => column.description = string(inner, key, errors)?.map(|d| d.value),
            }
            Ok(())
        },
    )?;
    column.seen = seen;
    Ok(parsed.then_some(column))
}

/// `replacement(...)`, or `None` (reported) when it is not a list.
fn parse_replacement(
    meta: &ParseNestedMeta<'_>,
    errors: &mut Errors,
) -> syn::Result<Option<ReplacementAttr>> {
    let mut replacement = ReplacementAttr {
        span: meta.path.span(),
        group: None,
        version: None,
        kind: None,
        seen: Vec::new(),
    };
    let mut seen = Vec::new();
    let parsed = nested(
        meta,
        REPLACEMENT,
        REPLACEMENT_KEYS,
        &mut seen,
        errors,
        |key, inner, errors| {
            let value = string(inner, key, errors)?;
            match key.name {
                GROUP => replacement.group = value,
                VERSION => replacement.version = value,
                _ => replacement.kind = value,
            }
            Ok(())
        },
    )?;
    replacement.seen = seen;
    Ok(parsed.then_some(replacement))
}

/// `value` if it is one of `allowed`, else reported.
fn one_of(
    value: Option<Spanned<String>>,
    key: Key,
    allowed: &[&str],
    errors: &mut Errors,
) -> Option<Spanned<String>> {
    let value = value?;
    if allowed.contains(&value.value.as_str()) {
        return Some(value);
    }
    errors.at(
        value.span,
        format_args!(
            "{} is not allowed; `{}` is one of: {}",
            key.with(&format!("{:?}", value.value)),
            key.name,
            allowed.join(", ")
        ),
    );
    None
}

/// Reads `outer(key = value, ...)`, calling `each` once per known, first-seen key. Returns
/// whether `outer` was a list at all; when it is not, that is reported and nothing else is.
fn nested(
    meta: &ParseNestedMeta<'_>,
    outer: &'static str,
    keys: &[&'static str],
    seen: &mut Vec<&'static str>,
    errors: &mut Errors,
    mut each: impl FnMut(Key, &ParseNestedMeta<'_>, &mut Errors) -> syn::Result<()>,
) -> syn::Result<bool> {
    if !meta.input.peek(syn::token::Paren) {
        errors.at(
            meta.path.span(),
            format_args!(
                "#[resource({outer})] takes a list: write `{outer}({} = \"...\", ...)`",
                keys.first().copied().unwrap_or_default()
            ),
        );
        skip_value(meta)?;
        return Ok(false);
    }
    meta.parse_nested_meta(|inner| {
        let Some(key) = known_key(&inner.path, keys) else {
            errors.at(
                inner.path.span(),
                format_args!(
                    "unknown key `{}` in #[resource({outer}(...))]; expected one of: {}{}",
                    path_name(&inner.path),
                    keys.join(", "),
                    suggestion(&inner.path, keys)
                ),
            );
            return skip_value(&inner);
        };
        if seen.contains(&key) {
            errors.at(
                inner.path.span(),
                format_args!(
                    "duplicate key `{key}` in #[resource({outer}(...))]: \
                     each key may be written once; remove this one"
                ),
            );
            return skip_value(&inner);
        }
        seen.push(key);
        each(Key::inside(outer, key), &inner, errors)
    })?;
    Ok(true)
}

/// `; did you mean `short_names`?` when `path` is a known key spelt in another case style.
fn suggestion(path: &Path, keys: &[&str]) -> String {
    let fold = |name: &str| {
        name.chars()
            .filter(|c| c.is_ascii_alphanumeric())
            .map(|c| c.to_ascii_lowercase())
            .collect::<String>()
    };
    let written = fold(&path_name(path));
    keys.iter()
        .find(|key| fold(key) == written)
        .map(|key| format!("; did you mean `{key}`?"))
        .unwrap_or_default()
}

/// The vocabulary entry `path` names, if any. Keywords such as `crate` and `type` are allowed
/// as keys, which `Path::is_ident` handles.
fn known_key(path: &Path, keys: &[&'static str]) -> Option<&'static str> {
    keys.iter().copied().find(|key| path.is_ident(key))
}

fn path_name(path: &Path) -> String {
    path.segments
        .iter()
        .map(|segment| segment.ident.to_string())
        .collect::<Vec<_>>()
        .join("::")
}

/// Consumes whatever follows a key (`= value`, `(...)` or nothing), so parsing can go on after
/// an unknown or duplicate key.
pub(crate) fn skip_value(meta: &ParseNestedMeta<'_>) -> syn::Result<()> {
    if meta.input.peek(syn::Token![=]) {
        meta.value()?.parse::<Expr>()?;
    } else if meta.input.peek(syn::token::Paren) {
        meta.parse_nested_meta(|inner| skip_value(&inner))?;
    }
    Ok(())
}

/// `key = "..."`.
fn string(
    meta: &ParseNestedMeta<'_>,
    key: Key,
    errors: &mut Errors,
) -> syn::Result<Option<Spanned<String>>> {
    let Some(expr) = value_expr(meta, key, "\"...\"", errors)? else {
        return Ok(None);
    };
    match lit_str(&expr) {
        Some(lit) => Ok(Some(Spanned {
            value: lit.value(),
            span: lit.span(),
        })),
        None => {
            errors.at(
                expr.span(),
                format_args!(
                    "{} takes a string: write {}",
                    key.with("..."),
                    key.with("\"...\"")
                ),
            );
            Ok(None)
        }
    }
}

/// `key = ["a", "b"]`.
fn string_list(
    meta: &ParseNestedMeta<'_>,
    key: Key,
    errors: &mut Errors,
) -> syn::Result<Option<Vec<Spanned<String>>>> {
    let Some(expr) = value_expr(meta, key, "[\"...\"]", errors)? else {
        return Ok(None);
    };
    let Expr::Array(array) = &expr else {
        errors.at(
            expr.span(),
            format_args!(
                "{} takes a list of strings: write {}",
                key.with("..."),
                key.with("[\"...\"]")
            ),
        );
        return Ok(None);
    };
    let mut items = Vec::new();
    for elem in &array.elems {
        match lit_str(elem) {
            Some(lit) => items.push(Spanned {
                value: lit.value(),
                span: lit.span(),
            }),
            None => errors.at(
                elem.span(),
                format_args!(
                    "{} takes string literals: write {}",
                    key.with("[...]"),
                    key.with("[\"...\"]")
                ),
            ),
        }
    }
    Ok(Some(items))
}

/// `key = 1` as an `i32`; negative numbers are written `-1`.
fn int(meta: &ParseNestedMeta<'_>, key: Key, errors: &mut Errors) -> syn::Result<Option<i32>> {
    let Some(expr) = value_expr(meta, key, "0", errors)? else {
        return Ok(None);
    };
    let (negative, lit) = match &expr {
        Expr::Lit(ExprLit {
            lit: Lit::Int(lit), ..
        }) => (false, Some(lit)),
        Expr::Unary(unary) if matches!(unary.op, syn::UnOp::Neg(_)) => match &*unary.expr {
            Expr::Lit(ExprLit {
                lit: Lit::Int(lit), ..
            }) => (true, Some(lit)),
            _ => (true, None),
        },
        _ => (false, None),
    };
    let parsed = lit.and_then(|lit: &LitInt| {
        let digits = if negative {
            format!("-{}", lit.base10_digits())
        } else {
            lit.base10_digits().to_owned()
        };
        digits.parse::<i32>().ok()
    });
    if parsed.is_none() {
        errors.at(
            expr.span(),
            format_args!(
                "{} takes a 32-bit integer: write e.g. {}",
                key.with("..."),
                key.with("1")
            ),
        );
    }
    Ok(parsed)
}

/// `key = "MAJOR.MINOR"`, e.g. `deprecated = "1.16"`.
fn kube_version(
    meta: &ParseNestedMeta<'_>,
    key: Key,
    errors: &mut Errors,
) -> syn::Result<Option<Spanned<(u16, u16)>>> {
    let Some(text) = string(meta, key, errors)? else {
        return Ok(None);
    };
    match parse_kube_version(&text.value) {
        Some(version) => Ok(Some(Spanned {
            value: version,
            span: text.span,
        })),
        None => {
            errors.at(
                text.span,
                format_args!(
                    "{} is not a Kubernetes release: write MAJOR.MINOR, e.g. {}",
                    key.with(&format!("{:?}", text.value)),
                    key.with("\"1.16\"")
                ),
            );
            Ok(None)
        }
    }
}

/// Parses `MAJOR.MINOR` with plain decimal numbers.
pub(crate) fn parse_kube_version(text: &str) -> Option<(u16, u16)> {
    let (major, minor) = text.split_once('.')?;
    let number = |part: &str| {
        if part.is_empty() || !part.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        part.parse::<u16>().ok()
    };
    Some((number(major)?, number(minor)?))
}

/// `status = "WidgetStatus"`: the status type of a custom resource.
fn status_type(meta: &ParseNestedMeta<'_>, errors: &mut Errors) -> syn::Result<Option<syn::Type>> {
    let key = Key::top(STATUS);
    if !meta.input.peek(syn::Token![=]) {
        errors.at(
            meta.path.span(),
            "#[derive(CustomResource)] takes the status type: write \
             #[resource(status = \"WidgetStatus\")], naming a struct that derives `kapi::Schema`",
        );
        skip_value(meta)?;
        return Ok(None);
    }
    let Some(text) = string(meta, key, errors)? else {
        return Ok(None);
    };
    match LitStr::new(&text.value, text.span).parse::<syn::Type>() {
        Ok(ty) => Ok(Some(ty)),
        Err(_) => {
            errors.at(
                text.span,
                format_args!("#[resource(status = {:?})] is not a type", text.value),
            );
            Ok(None)
        }
    }
}

/// `key = true` or `key = false`.
fn boolean(meta: &ParseNestedMeta<'_>, key: Key, errors: &mut Errors) -> syn::Result<Option<bool>> {
    let Some(expr) = value_expr(meta, key, "false", errors)? else {
        return Ok(None);
    };
    match &expr {
        Expr::Lit(ExprLit {
            lit: Lit::Bool(b), ..
        }) => Ok(Some(b.value)),
        _ => {
            errors.at(
                expr.span(),
                format_args!(
                    "{} takes `true` or `false`: write {}",
                    key.with("..."),
                    key.with("false")
                ),
            );
            Ok(None)
        }
    }
}

/// `merge = path::TO_STATIC` (a `kapi::merge::TypeInfo`) or `family = path::TO_STATIC` (a
/// `kapi::conversion::Family`): a static the kind's description names.
fn static_path(
    meta: &ParseNestedMeta<'_>,
    key: &str,
    ty: &str,
    errors: &mut Errors,
) -> syn::Result<Option<Path>> {
    if !meta.input.peek(syn::Token![=]) {
        errors.at(
            meta.path.span(),
            format_args!(
                "#[resource({key})] needs a value: write `{key} = path::TO_STATIC`, naming a \
                 `static` of type `{ty}`"
            ),
        );
        return Ok(None);
    }
    meta.value()?;
    meta.input.parse::<Path>().map(Some)
}

/// `crate = "::path::to::kapi"`.
fn crate_path(meta: &ParseNestedMeta<'_>, errors: &mut Errors) -> syn::Result<Option<Path>> {
    let Some(path) = string(meta, Key::top(CRATE), errors)? else {
        return Ok(None);
    };
    // Parsing through a literal with the written span makes a path that does not resolve
    // point at this attribute instead of at the derive.
    let parsed = LitStr::new(&path.value, path.span).parse::<Path>().ok();
    if parsed.is_none() {
        errors.at(
            path.span,
            format_args!(
                "#[resource(crate = {:?})] is not a path: write the path to \
                 the kapi crate, e.g. #[resource(crate = \"::kapi\")]",
                path.value
            ),
        );
    }
    Ok(parsed)
}

/// A flag such as `status`: present means on, and it takes no value. Returns where it was
/// written, or `None` (reported) when it was given a value.
fn flag(meta: &ParseNestedMeta<'_>, key: Key, errors: &mut Errors) -> syn::Result<Option<Span>> {
    if meta.input.peek(syn::Token![=]) || meta.input.peek(syn::token::Paren) {
        errors.at(
            meta.path.span(),
            format_args!(
                "{} takes no value: write just `{}`",
                key.quote(key.name),
                key.name
            ),
        );
        skip_value(meta)?;
        return Ok(None);
    }
    Ok(Some(meta.path.span()))
}

/// The expression after `key =`, or `None` (reported) when the key has no `=`.
fn value_expr(
    meta: &ParseNestedMeta<'_>,
    key: Key,
    example: &str,
    errors: &mut Errors,
) -> syn::Result<Option<Expr>> {
    if !meta.input.peek(syn::Token![=]) {
        errors.at(
            meta.path.span(),
            format_args!(
                "{} needs a value: write {}",
                key.quote(key.name),
                key.with(example)
            ),
        );
        skip_value(meta)?;
        return Ok(None);
    }
    meta.value()?.parse::<Expr>().map(Some)
}

fn lit_str(expr: &Expr) -> Option<&LitStr> {
    match expr {
        Expr::Lit(ExprLit {
            lit: Lit::Str(lit), ..
        }) => Some(lit),
        // `stringify!`-style groups from macro_rules callers arrive wrapped in invisible groups.
        Expr::Group(group) => lit_str(&group.expr),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(attrs: &[Attribute]) -> (Attrs, Vec<String>) {
        let mut errors = Errors::default();
        let parsed = Attrs::parse(attrs, &mut errors);
        let messages = errors
            .finish()
            .map(|e| e.into_iter().map(|e| e.to_string()).collect())
            .unwrap_or_default();
        (parsed, messages)
    }

    #[test]
    fn kube_versions() {
        let cases = [
            ("1.16", Some((1, 16))),
            ("1.9", Some((1, 9))),
            ("2.0", Some((2, 0))),
            ("v1.16", None),
            ("1", None),
            ("1.", None),
            (".1", None),
            ("1.16.0", None),
            ("1.+2", None),
            ("70000.1", None),
        ];
        for (text, want) in cases {
            assert_eq!(parse_kube_version(text), want, "{text}");
        }
    }

    #[test]
    fn reads_every_key_across_attributes() {
        let attrs: Vec<Attribute> = vec![
            syn::parse_quote!(#[resource(group = "apps", version = "v1", kind = "Deployment")]),
            syn::parse_quote!(#[resource(plural = "deployments", singular = "deployment", cluster)]),
            syn::parse_quote!(#[resource(short_names = ["deploy"], categories = ["all"], selectable_fields = [".spec.x"])]),
            syn::parse_quote!(#[resource(verbs = ["get", "list"], status, no_list, crate = "::my::kapi")]),
            syn::parse_quote!(#[resource(scale(spec_replicas_path = ".spec.replicas", status_replicas_path = ".status.replicas"))]),
            syn::parse_quote!(#[resource(printer_column(name = "Age", type = "date", json_path = ".metadata.creationTimestamp", priority = -1, format = "date-time", description = "d"))]),
            syn::parse_quote!(#[resource(printer_column(name = "B", type = "string", json_path = ".spec.b"))]),
            syn::parse_quote!(#[resource(introduced = "1.9", deprecated = "1.16", removed = "1.22", deprecation_warning = "w")]),
            syn::parse_quote!(#[resource(replacement(group = "networking.k8s.io", version = "v1", kind = "Ingress"))]),
        ];
        let (parsed, errors) = parse(&attrs);
        assert!(errors.is_empty(), "{errors:?}");
        assert_eq!(parsed.group.map(|g| g.value).as_deref(), Some("apps"));
        assert!(parsed.scope.is_some_and(|s| s.value == Scope::Cluster));
        assert_eq!(parsed.short_names.len(), 1);
        assert_eq!(parsed.verbs.map(|v| v.value.len()), Some(2));
        assert!(parsed.status.is_some() && parsed.no_list.is_some());
        assert_eq!(parsed.printer_columns.len(), 2);
        assert_eq!(parsed.printer_columns[0].priority, Some(-1));
        assert_eq!(
            parsed.printer_columns[0].format.as_deref(),
            Some("date-time")
        );
        assert_eq!(parsed.removed.map(|v| v.value), Some((1, 22)));
        assert!(parsed.krate.is_some());
        let replacement = parsed.replacement.expect("replacement");
        assert_eq!(
            replacement.kind.map(|k| k.value).as_deref(),
            Some("Ingress")
        );
    }

    #[test]
    fn keeps_going_after_mistakes() {
        let attrs: Vec<Attribute> = vec![syn::parse_quote!(
            #[resource(colour = "red", group = 1, group = "a", version = "v1", status = true, printer_column(name = "x", type = "text", json_path = ".x"), scale(spec_replicas_path = ".spec.r"))]
        )];
        let (parsed, errors) = parse(&attrs);
        assert_eq!(errors.len(), 6, "{errors:#?}");
        assert!(errors[0].starts_with("unknown key `colour`"));
        assert!(errors[1].contains("takes a string"));
        assert!(errors[2].starts_with("duplicate key `group`"));
        assert!(errors[3].contains("takes no value"));
        assert!(errors[4].contains("is not allowed; `type` is one of"));
        assert!(errors[5].contains("missing `status_replicas_path`"));
        // Keys after the mistakes were still read.
        assert!(parsed.version.is_some());
        assert!(parsed.seen.contains_key(GROUP));
    }
}
