//! The error collector every stage of a derive reports into, and [`Failure`], the one error
//! type every derive returns.
//!
//! Stages keep going after a mistake so that one compile shows every problem; the collector
//! combines them into one `syn::Error`, which renders as one `compile_error!` per message.

use std::fmt::Display;

use proc_macro2::{Span, TokenStream};

/// Spanned errors gathered over one derive.
#[derive(Default)]
pub(crate) struct Errors {
    combined: Option<syn::Error>,
}

impl Errors {
    /// Records an error pointing at `span`.
    pub(crate) fn at(&mut self, span: Span, message: impl Display) {
        self.push(syn::Error::new(span, message));
    }

    /// Records an error that syn produced while parsing.
    pub(crate) fn push(&mut self, error: syn::Error) {
        match &mut self.combined {
            Some(combined) => combined.combine(error),
            None => self.combined = Some(error),
        }
    }

    /// Whether nothing was reported yet.
    pub(crate) fn is_empty(&self) -> bool {
        self.combined.is_none()
    }

    /// All errors, if there were any.
    pub(crate) fn finish(self) -> Option<syn::Error> {
        self.combined
    }
}

/// A derive that failed: its errors plus a stub that keeps the rest of the crate compiling.
pub(crate) struct Failure {
    error: syn::Error,
    stub: TokenStream,
}

impl Failure {
    /// A failure with these errors and this stub.
    pub(crate) fn new(error: syn::Error, stub: TokenStream) -> Self {
        Failure { error, stub }
    }

    /// The `compile_error!`s followed by the stub.
    pub(crate) fn into_compile_error(self) -> TokenStream {
        let mut tokens = self.error.into_compile_error();
        tokens.extend(self.stub);
        tokens
    }
}
