//! "Did you mean …?": the closest of some candidate names to a misspelt one.

/// The candidate nearest to `word`, if one is near enough to be a likely
/// intent: the same name in another case, or one within a small edit
/// distance (Damerau–Levenshtein, at most a third of the word's length).
pub fn closest<'a>(word: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let lower = word.to_lowercase();
    let limit = (word.chars().count() / 3).max(1);
    let mut best: Option<(usize, &'a str)> = None;
    for c in candidates {
        if c == word {
            continue;
        }
        let d = if c.to_lowercase() == lower { 0 } else { strsim::damerau_levenshtein(word, c) };
        if d <= limit && best.is_none_or(|(bd, bc)| d < bd || (d == bd && c < bc)) {
            best = Some((d, c));
        }
    }
    best.map(|(_, c)| c)
}

#[cfg(test)]
mod tests {
    use super::closest;

    #[test]
    fn near_names_are_suggested() {
        let names = ["map", "mapSeq", "reduce", "zip", "offset"];
        assert_eq!(closest("mpa", names), Some("map"));
        assert_eq!(closest("mapseq", names), Some("mapSeq"));
        assert_eq!(closest("redcue", names), Some("reduce"));
        assert_eq!(closest("ofset", names), Some("offset"));
        assert_eq!(closest("frobnicate", names), None);
        assert_eq!(closest("x", names), None);
    }
}
