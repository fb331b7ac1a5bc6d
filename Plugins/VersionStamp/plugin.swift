import Foundation
import PackagePlugin

/// Stamps the target with blepay's version (the `VERSION` file) and the commit it is built from (`git describe`,
/// `-dirty` with uncommitted changes; `unknown` outside a git checkout), so that every binary's `--version` names
/// exactly what it runs. The file is rewritten only when the stamp changes, so a build without changes stays a
/// build without work.
@main
struct VersionStamp: BuildToolPlugin {
    func createBuildCommands(context: PluginContext, target: Target) throws -> [Command] {
        let output = context.pluginWorkDirectoryURL.appending(path: "Stamp")
        let script = #"""
            set -e
            cd "$1"; mkdir -p "$2"
            version=$(cat VERSION 2>/dev/null || echo 0.0.0)
            commit=$(git describe --always --dirty --abbrev=12 --exclude '*' 2>/dev/null || echo unknown)
            printf '/// Written at build time by the VersionStamp plugin.\nextension BlepayVersion {\n    public static let version = "%s"\n    public static let commit = "%s"\n}\n' \
                "$version" "$commit" > "$2/Stamp.swift.new"
            if cmp -s "$2/Stamp.swift.new" "$2/Stamp.swift"; then rm "$2/Stamp.swift.new"; else mv "$2/Stamp.swift.new" "$2/Stamp.swift"; fi
            """#
        return [.prebuildCommand(
            displayName: "Stamping the version and commit",
            executable: URL(fileURLWithPath: "/bin/sh"),
            arguments: ["-c", script, "stamp", context.package.directoryURL.path, output.path],
            outputFilesDirectory: output)]
    }
}
