/// What every blepay binary says for `--version`: blepay's version and the commit it was built from, stamped at
/// build time (`Plugins/VersionStamp`).
public enum BlepayVersion {
    /// `blepay 0.9.0 (commit 1a2b3c4d5e6f)`.
    public static var line: String { "blepay \(version) (commit \(commit))" }
}
