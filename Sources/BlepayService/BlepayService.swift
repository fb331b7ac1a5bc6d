// BlepayService: what blepayd and blepay-ledger share as long-running services under systemd: logs for the
// journal (priorities and structured fields) at a level the configuration sets and a reload can change, and SIGHUP
// as a reload that never stops the process.
