# One image for every service of the narrator; compose picks the command.
FROM python:3.11-slim
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1
WORKDIR /app
COPY pyproject.toml README.md ./
COPY services ./services
COPY shared ./shared
COPY avalon ./avalon
RUN pip install --no-cache-dir .
RUN useradd --create-home avalon
USER avalon
CMD ["avalon", "engine"]
