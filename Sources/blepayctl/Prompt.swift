import FoundationEssentials
import Glibc

/// What a person types that must not show: on a terminal, a prompt on standard error and no echo; otherwise (a
/// pipe, a file) the next line of standard input, as scripts give it.
enum Prompt {
    static func secretLine(_ prompt: String) -> String? {
        var saved = termios()
        guard isatty(STDIN_FILENO) == 1, tcgetattr(STDIN_FILENO, &saved) == 0 else {
            return readLine(strippingNewline: true)
        }
        var quiet = saved
        quiet.c_lflag &= ~tcflag_t(ECHO)
        tcsetattr(STDIN_FILENO, TCSADRAIN, &quiet)
        // Asked only once the terminal no longer echoes: nothing typed in answer can show.
        Output.write(Data(prompt.utf8), to: STDERR_FILENO)
        defer {
            tcsetattr(STDIN_FILENO, TCSADRAIN, &saved)
            Output.write(Data("\n".utf8), to: STDERR_FILENO)
        }
        return readLine(strippingNewline: true)
    }
}
