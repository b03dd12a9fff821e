"""The submission views, gathered for the URL modules: each lives in the module of its page.

* :mod:`submissions.form_views`: ``/submit/``, the submission form;
* :mod:`submissions.page_views`: a submission's page, its live status, cancel and publish;
* :mod:`submissions.queue_views`: ``/queue/``, the public queue.
"""

from submissions.form_views import hub_card, new_submission
from submissions.page_views import cancel, detail, forget_hub_token, publish, status
from submissions.queue_views import queue

__all__ = ["cancel", "detail", "forget_hub_token", "hub_card", "new_submission", "publish", "queue", "status"]
