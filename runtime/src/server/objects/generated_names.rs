//! The random part of the names the server makes up: `generateName`'s suffix, the projected
//! token volume's `kube-api-access-<suffix>` and the token Secrets' `<account>-token-<suffix>`,
//! five characters as upstream's `SimpleNameGenerator` (k8s.io/apiserver `pkg/storage/names`)
//! draws them.

/// A short random suffix from upstream's alphabet (no vowels, no look-alikes).
pub(crate) fn random_suffix() -> String {
    const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    uuid::Uuid::new_v4()
        .as_bytes()
        .iter()
        .take(5)
        .map(|b| char::from(ALPHABET[usize::from(*b) % ALPHABET.len()]))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suffixes_use_upstreams_alphabet() {
        let s = random_suffix();
        assert_eq!(s.len(), 5);
        assert!(s.chars().all(|c| "bcdfghjklmnpqrstvwxz2456789".contains(c)));
    }
}
