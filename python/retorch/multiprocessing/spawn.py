"""spawn/start_processes: run fn(i, *args) in nprocs processes and raise when one of them fails."""
import ctypes
import multiprocessing
import multiprocessing.connection
import signal
import sys
import warnings

__all__ = ["spawn", "start_processes", "ProcessContext", "ProcessException",
           "ProcessRaisedException", "ProcessExitedException", "SpawnContext"]


class ProcessException(Exception):
    __slots__ = ["error_index", "error_pid"]

    def __init__(self, msg, error_index, pid):
        super().__init__(msg)
        self.msg = msg
        self.error_index = error_index
        self.pid = pid

    def __reduce__(self):
        return type(self), (self.msg, self.error_index, self.pid)


class ProcessRaisedException(ProcessException):
    """A child process raised: the message carries its traceback."""

    def __init__(self, msg, error_index, error_pid):
        super().__init__(msg, error_index, error_pid)


class ProcessExitedException(ProcessException):
    """A child process died from a signal or exited with a nonzero code without raising."""
    __slots__ = ["exit_code"]

    def __init__(self, msg, error_index, error_pid, exit_code, signal_name=None):
        super().__init__(msg, error_index, error_pid)
        self.exit_code = exit_code
        self.signal_name = signal_name

    def __reduce__(self):
        return (type(self), (self.msg, self.error_index, self.pid, self.exit_code,
                             self.signal_name))


def _set_pdeathsig(sig):
    """Asks Linux to signal this process when its parent dies (prctl PR_SET_PDEATHSIG)."""
    if sys.platform.startswith("linux"):
        try:
            ctypes.CDLL(None, use_errno=True).prctl(1, int(sig), 0, 0, 0)
        except (OSError, AttributeError):
            pass


def _wrap(fn, i, args, error_queue):
    _set_pdeathsig(signal.SIGINT)  # a child outlives no parent
    try:
        fn(i, *args)
    except KeyboardInterrupt:
        pass  # SIGINT from the parent
    except Exception:
        import traceback
        error_queue.put(traceback.format_exc())
        sys.exit(1)


class ProcessContext:
    """The processes of one start_processes call; join() raises the first failure."""

    def __init__(self, processes, error_queues):
        self.error_queues = error_queues
        self.processes = processes
        self.sentinels = {process.sentinel: index for index, process in enumerate(processes)}

    def pids(self):
        return [int(process.pid) for process in self.processes]

    def join(self, timeout=None):
        """True once every process exited cleanly, False while some still run; when one failed,
        terminates the others and raises ProcessRaisedException / ProcessExitedException."""
        if len(self.sentinels) == 0:
            return True
        ready = multiprocessing.connection.wait(self.sentinels.keys(), timeout=timeout)
        error_index = None
        for sentinel in ready:
            index = self.sentinels.pop(sentinel)
            process = self.processes[index]
            process.join()
            if process.exitcode != 0:
                error_index = index
                break
        if error_index is None:
            return len(self.sentinels) == 0
        for process in self.processes:
            if process.is_alive():
                process.terminate()
            process.join()
        failed = self.processes[error_index]
        if self.error_queues[error_index].empty():
            exitcode = failed.exitcode
            if exitcode < 0:
                name = signal.Signals(-exitcode).name
                raise ProcessExitedException(
                    "process %d terminated with signal %s" % (error_index, name),
                    error_index=error_index, error_pid=failed.pid, exit_code=exitcode,
                    signal_name=name)
            raise ProcessExitedException(
                "process %d terminated with exit code %d" % (error_index, exitcode),
                error_index=error_index, error_pid=failed.pid, exit_code=exitcode)
        original_trace = self.error_queues[error_index].get()
        msg = "\n\n-- Process %d terminated with the following error:\n" % error_index
        msg += original_trace
        raise ProcessRaisedException(msg, error_index, failed.pid)


class SpawnContext(ProcessContext):
    def __init__(self, processes, error_queues):
        warnings.warn("SpawnContext is renamed to ProcessContext since 1.4 release.")
        super().__init__(processes, error_queues)


def start_processes(fn, args=(), nprocs=1, join=True, daemon=False, start_method="spawn"):
    """Starts nprocs processes running fn(i, *args) with the given start method; joins them
    (returns None) or, with join=False, returns their ProcessContext."""
    mp = multiprocessing.get_context(start_method)
    error_queues = []
    processes = []
    for i in range(nprocs):
        error_queue = mp.SimpleQueue()
        process = mp.Process(target=_wrap, args=(fn, i, args, error_queue), daemon=daemon)
        process.start()
        error_queues.append(error_queue)
        processes.append(process)
    context = ProcessContext(processes, error_queues)
    if not join:
        return context
    while not context.join():
        pass


def spawn(fn, args=(), nprocs=1, join=True, daemon=False, start_method="spawn"):
    """Runs fn(i, *args) for i in range(nprocs), each in a fresh "spawn" process (fn must be
    importable: defined at a module's top level). If one fails the rest are killed and its error
    (with the child's traceback) is raised as ProcessRaisedException."""
    if start_method != "spawn":
        warnings.warn("This method only supports start_method=spawn (got: %s).\n"
                      "To use a different start_method use:\n\t\t"
                      " torch.multiprocessing.start_processes(...)" % start_method)
    return start_processes(fn, args, nprocs, join, daemon, start_method="spawn")
