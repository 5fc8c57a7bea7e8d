//! The shape of a Harmony token stream that our replay's clean verdict depends on
//! (harmony_doctor/streams/diagnose.py `clean_key` is the reference, tested equal).

/// The stream with every run of ordinary tokens after a `<|message|>` cut to one token, 0.
/// Tokens at or above `first_special` are special; `message` is `<|message|>`.
pub fn clean_key(tokens: &[i64], first_special: i64, message: i64) -> Vec<i64> {
    let mut out = Vec::with_capacity(tokens.len().min(256));
    let (mut body, mut kept) = (false, false);
    for &token in tokens {
        if token >= first_special {
            body = token == message;
            kept = false;
            out.push(token);
        } else if !body {
            out.push(token);
        } else if !kept {
            out.push(0);
            kept = true;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn content_runs_become_one_token_headers_stay() {
        const M: i64 = 200_008;
        let stream = [
            200_005, 35_644, M, 5, 6, 7, 200_007, 200_006, 9, M, 1, 200_002,
        ];
        assert_eq!(
            clean_key(&stream, 199_998, M),
            vec![200_005, 35_644, M, 0, 200_007, 200_006, 9, M, 0, 200_002]
        );
        assert_eq!(clean_key(&[1, 2, 3], 199_998, M), vec![1, 2, 3]);
        assert_eq!(clean_key(&[M, M, 4], 199_998, M), vec![M, M, 0]);
    }
}
