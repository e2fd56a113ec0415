-- JOIN: io_uring submission to completion on the request, file columns at completion.
SELECT c.file_name, COUNT(*), SUM(c.res) FROM io_uring.io_uring_submit_req s JOIN io_uring.io_uring_complete c ON s.req = c.req GROUP BY c.file_name
