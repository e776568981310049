/* slayer_kb._fstat: stat thousands of files of one folder on every core.
 *
 * The freshness check needs one stat per memory file. At 100,000 files that is about 150 ms of
 * kernel time on one core here, and Python adds as much again building stat results; threads
 * in Python only contend for the GIL. This does the stats in C, without the GIL, split over
 * threads, and returns the signatures packed, so that Python compares them in one memcmp.
 *
 * signatures(folder, names, threads) -> bytes
 *   names: each file name followed by a NUL byte.
 *   returns: three native int64 per name, (mtime_ns, size, inode) for a regular file,
 *   (0, -1, 0) for anything else (symlink, folder, FIFO), (0, -2, 0) when the stat failed.
 *   The layout and sentinels are the pure-Python fallback's in filestat.py; keep them alike.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAX_THREADS 16

#ifdef __APPLE__
#define MTIME(st) ((st).st_mtimespec)
#else
#define MTIME(st) ((st).st_mtim)
#endif

typedef struct {
    int folder;
    const char **names;
    int64_t *out;
    Py_ssize_t begin, end;
} Job;

static void *run(void *arg) {
    Job *job = (Job *)arg;
    struct stat st;
    for (Py_ssize_t i = job->begin; i < job->end; i++) {
        int64_t *sig = job->out + 3 * i;
        if (fstatat(job->folder, job->names[i], &st, AT_SYMLINK_NOFOLLOW) != 0) {
            sig[0] = 0; sig[1] = -2; sig[2] = 0;
        } else if (!S_ISREG(st.st_mode)) {
            sig[0] = 0; sig[1] = -1; sig[2] = 0;
        } else {
            sig[0] = (int64_t)MTIME(st).tv_sec * 1000000000 + MTIME(st).tv_nsec;
            sig[1] = (int64_t)st.st_size;
            sig[2] = (int64_t)st.st_ino;
        }
    }
    return NULL;
}

static PyObject *signatures(PyObject *self, PyObject *args) {
    PyObject *folder_path = NULL;
    PyObject *names;  /* bytes, immutable: safe to read while the GIL is released */
    int threads;
    if (!PyArg_ParseTuple(args, "O&Si", PyUnicode_FSConverter, &folder_path, &names, &threads))
        return NULL;
    PyObject *result = NULL;
    const char **table = NULL;
    const char *blob = PyBytes_AS_STRING(names);
    Py_ssize_t size = PyBytes_GET_SIZE(names);
    Py_ssize_t count = 0;
    for (Py_ssize_t i = 0; i < size; i++)
        count += blob[i] == '\0';
    if (size > 0 && blob[size - 1] != '\0') {
        PyErr_SetString(PyExc_ValueError, "names must each end with a NUL byte");
        goto done;
    }
    table = PyMem_Malloc(sizeof(char *) * (count ? count : 1));
    if (table == NULL) { PyErr_NoMemory(); goto done; }
    for (Py_ssize_t i = 0, at = 0; i < count; i++) {
        table[i] = blob + at;
        at += (Py_ssize_t)strlen(blob + at) + 1;
    }
    result = PyBytes_FromStringAndSize(NULL, count * 3 * (Py_ssize_t)sizeof(int64_t));
    if (result == NULL) goto done;
    int64_t *out = (int64_t *)PyBytes_AS_STRING(result);
    int folder = open(PyBytes_AS_STRING(folder_path), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (folder < 0) {
        PyErr_SetFromErrnoWithFilenameObject(PyExc_OSError, folder_path);
        Py_CLEAR(result);
        goto done;
    }
    if (threads < 1) threads = 1;
    if (threads > MAX_THREADS) threads = MAX_THREADS;
    if (count < 1024 * threads) threads = 1;  /* starting threads costs more than it saves */
    Job jobs[MAX_THREADS];
    pthread_t ids[MAX_THREADS];
    int started = 0;
    Py_BEGIN_ALLOW_THREADS
    for (int t = 0; t < threads; t++) {
        jobs[t] = (Job){folder, table, out, count * t / threads, count * (t + 1) / threads};
        /* A thread that can't start leaves its share to this one, below. */
        if (t > 0 && pthread_create(&ids[t], NULL, run, &jobs[t]) == 0) started |= 1 << t;
    }
    run(&jobs[0]);
    for (int t = 1; t < threads; t++) {
        if (started & (1 << t)) pthread_join(ids[t], NULL);
        else run(&jobs[t]);
    }
    close(folder);
    Py_END_ALLOW_THREADS
done:
    PyMem_Free(table);
    Py_XDECREF(folder_path);
    return result;
}

static PyMethodDef methods[] = {
    {"signatures", signatures, METH_VARARGS,
     "signatures(folder, names, threads) -> bytes: (mtime_ns, size, inode) of each named file."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_fstat", NULL, -1, methods};

PyMODINIT_FUNC PyInit__fstat(void) { return PyModule_Create(&module); }
