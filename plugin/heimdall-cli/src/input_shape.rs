//! `--input-shape NAME=1x3x512x512`: static shapes for inputs with dynamic dimensions.

/// Parses `NAME=D0xD1x...` (dimensions >= 1).
pub fn parse(s: &str) -> Result<(String, Vec<usize>), String> {
    let (name, dims) = s
        .rsplit_once('=')
        .ok_or_else(|| format!("'{s}': expected NAME=1x3x512x512"))?;
    let dims = dims
        .split(['x', 'X', ','])
        .map(|d| match d.trim().parse::<usize>() {
            Ok(v) if v >= 1 => Ok(v),
            _ => Err(format!("'{s}': dimension '{d}' is not a positive integer")),
        })
        .collect::<Result<Vec<_>, _>>()?;
    if name.is_empty() {
        return Err(format!("'{s}': empty input name"));
    }
    Ok((name.to_string(), dims))
}

#[cfg(test)]
mod tests {
    use super::parse;

    #[test]
    fn parses_shapes() {
        assert_eq!(
            parse("x=1x3x32x64").unwrap(),
            ("x".into(), vec![1, 3, 32, 64])
        );
        assert!(parse("x=1x0").is_err());
        assert!(parse("1x3").is_err());
    }
}
